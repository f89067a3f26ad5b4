#!/usr/bin/env bash
# kiln's model.fsdp_step beside PyTorch FSDP (bench/fsdp_ref.py) with the same step shape, on one
# host, one process per GPU each; prints a small table with the ratio of the step times.
#
#   bench/fsdp_compare.sh [--worker PATH] [--np N] [--layers L] [--hidden H] [--tokens T]
#                         [--steps N] [--peak TFLOPS] [--out DIR]
#
#   --worker PATH  kiln-worker (env KILN_WORKER; default .carry/gpu/bin/kiln-worker, else build/bin)
#   --np N         ranks = GPUs (default: the GPUs nvidia-smi lists; 1 works)
#   --layers/--hidden/--tokens   the shape (default 8, 8192, 8192 tokens per rank)
#   --steps N      timed steps of each side (default 10)
#   --peak TFLOPS  dense bf16 peak per GPU for kiln's MFU (default 989, the H100/H200 SXM datasheet)
#   --out DIR      where the JSON lines and logs go (default $OUT, else ./runs/fsdp-compare)
# Needs python3 with torch for the reference (skipped with a note otherwise). NCCL_NVLS_ENABLE=0.
set -uo pipefail
cd "$(dirname "$0")/.."
WORKER=${KILN_WORKER:-}
[[ -z $WORKER && -x .carry/gpu/bin/kiln-worker ]] && WORKER=.carry/gpu/bin/kiln-worker
WORKER=${WORKER:-build/bin/kiln-worker}
NP="" LAYERS=8 HIDDEN=8192 TOKENS=8192 STEPS=10 PEAK=989
OUTDIR=${OUT:-runs/fsdp-compare}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --worker) WORKER=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --layers) LAYERS=$2; shift 2 ;;
    --hidden) HIDDEN=$2; shift 2 ;;
    --tokens) TOKENS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --peak) PEAK=$2; shift 2 ;;
    --out) OUTDIR=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[[ -d .carry/gpu/lib ]] && export LD_LIBRARY_PATH=$PWD/.carry/gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[[ -z $NP ]] && NP=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[[ ${NP:-0} -ge 1 ]] || { echo "no GPU visible" >&2; exit 2; }
[[ -x $WORKER ]] || { echo "no kiln-worker at $WORKER" >&2; exit 2; }
mkdir -p "$OUTDIR"
KILN_OUT=$OUTDIR/kiln.jsonl REF_OUT=$OUTDIR/torch.jsonl LOG=$OUTDIR/compare.log
: >"$KILN_OUT"; : >"$REF_OUT"; : >"$LOG"

params="{\"layers\":$LAYERS,\"hidden\":$HIDDEN,\"tokens\":$TOKENS,\"steps\":$STEPS,\"peak_tflops\":$PEAK}"
timeout -k 10 300 mpirun -np "$NP" --bind-to none -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH \
  "$WORKER" --standalone --tests model.fsdp_step --params "$params" --deadline 240 >"$KILN_OUT" 2>>"$LOG"
echo "kiln-worker exit $?" >>"$LOG"
if python3 -c 'import torch' 2>/dev/null; then
  timeout -k 10 300 python3 -m torch.distributed.run --standalone --nproc-per-node "$NP" bench/fsdp_ref.py \
    --layers "$LAYERS" --hidden "$HIDDEN" --tokens "$TOKENS" --steps "$STEPS" >"$REF_OUT" 2>>"$LOG"
  echo "fsdp_ref.py exit $?" >>"$LOG"
else
  echo "torch is not importable here: no PyTorch reference" | tee -a "$LOG"
fi

python3 - "$KILN_OUT" "$REF_OUT" "$NP" <<'PY'
import json, sys
def rows(p):
    return [json.loads(l) for l in open(p) if l.startswith("{")]
kiln = [r for r in rows(sys.argv[1]) if r.get("test") == "model.fsdp_step"]
ref = rows(sys.argv[2])
fig = next((r for r in kiln if r.get("metric") == "tflops" and r.get("status") == "pass"), None)
det = next((r for r in kiln if r.get("metric") == "determinism"), None)
ends = [f'{r["status"]}: {r.get("reason", "")}'.rstrip(": ") for r in kiln if r.get("record") == "end"]
print(f"model.fsdp_step vs PyTorch FSDP, {sys.argv[3]} GPU(s)")
print(f'{"":24}{"step ms":>10}{"TFLOP/s":>10}{"exposed ms":>12}{"comm share":>12}{"MFU":>8}')
if fig:
    x = fig["extra"]
    mfu = f'{x["mfu"]:.3f}' if "mfu" in x else "-"
    print(f'{"kiln model.fsdp_step":24}{x["step_ms"]:10.2f}{fig["value"]:10.1f}{x["exposed_comm_ms"]:12.2f}'
          f'{x["comm_share"]:12.3f}{mfu:>8}')
    print(f'{"  compute only / comm only":24}{x["compute_only_ms"]:10.2f}{"":10}{x["comm_only_ms"]:12.2f}')
else:
    print("kiln model.fsdp_step: no figure (" + "; ".join(ends or ["no output"]) + ")")
if det:
    print(f'  determinism: {det["status"]} {det.get("reason", "")}')
if ref:
    r = ref[-1]
    print(f'{"PyTorch " + r.get("api", "") + " " + r.get("torch", ""):24}{r["step_ms"]:10.2f}{r["tflops"]:10.1f}'
          f'{"":12}{"":12}{"":>8}   peak mem {r.get("peak_mem_gib", 0):.1f} GiB')
if fig and ref:
    print(f'ratio kiln/pytorch step time: {fig["extra"]["step_ms"] / ref[-1]["step_ms"]:.3f}')
PY
