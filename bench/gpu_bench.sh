#!/usr/bin/env bash
# GPU benchmark of kiln's GPU tests, for the GPU machine: everything GPU-related in one go, with a
# plain-CUDA reference measured in the same run beside each figure, and a table printed last.
#
#   bench/gpu_bench.sh --prepare      on the development machine: build kiln-worker and the
#                                     references, copy them and the shared libraries the GPU
#                                     machine lacks into .carry/gpu (ignored; pass it as `carry`)
#   bench/gpu_bench.sh [--quick] [--telemetry]
#                                     on the GPU machine: run and print the table; --telemetry (or
#                                     KILN_BENCH_TELEMETRY=1) adds a 60 s gpu.burn campaign through
#                                     kiln run (needs .carry/gpu/bin/kiln and mpirun) whose node
#                                     telemetry is summarised in the table; its report.html is kept
#
# Environment: KILN_BENCH_OUT (default $OUT or ./runs/gpu-bench) receives results.jsonl, the
# references' output and the log; KILN_WORKER overrides the worker binary.
# Runs, in order: gpu.health (clean); the node health check (clean, then a bit flip); the health
# profile as a campaign (kiln run --profile health, clean then a bit flip); the stack and DCGM
# checks; GEMM ratio (ref, burn, ref); 60 s sustained burn (clean);
# drills (bit flip, slowed GPU, hidden GPU); memtest and its references; copy_bw and
# cudaMemcpyPeer; model.fsdp_step beside PyTorch FSDP (bench/fsdp_compare.sh); with --telemetry, a
# 60 s gpu.burn campaign with 1 Hz node telemetry. The standalone runs' telemetry lines go to
# telemetry-standalone.jsonl, not results.jsonl. Never changes clocks, power limits, persistence, MIG or compute mode.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CARRY=$ROOT/.carry/gpu
CUDA=${CUDA_HOME:-/usr/local/cuda-13.0}

if [[ ${1:-} == --prepare ]]; then
  set -e
  BUILD=${KILN_GPU_BUILD:-$ROOT/build-gpu}
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$BUILD" -j2 kiln-worker kiln
  mkdir -p "$CARRY/bin" "$CARRY/lib"
  cp "$BUILD/bin/kiln-worker" "$BUILD/bin/kiln" "$CARRY/bin/"
  "$CUDA/bin/nvcc" -O3 -std=c++17 -arch=sm_90 -o "$CARRY/bin/ref_gemm" bench/ref_gemm.cu -lcublas
  "$CUDA/bin/nvcc" -O3 -std=c++17 -arch=sm_90 -o "$CARRY/bin/gpu_ref_copy" bench/gpu_ref_copy.cu
  # Libraries the GPU machine does not have (no Boost, spdlog, fmt, toml++ there).
  for lib in $(ldd "$CARRY/bin/kiln-worker" "$CARRY/bin/kiln" | awk '/boost|spdlog|fmt|sqlite|tomlplusplus/ {print $3}' | sort -u); do
    cp -L "$lib" "$CARRY/lib/"
  done
  du -sh "$CARRY"
  exit 0
fi

QUICK=0
TELEMETRY=${KILN_BENCH_TELEMETRY:-0}
for a in "$@"; do
  case $a in
    --quick) QUICK=1 ;;
    --telemetry) TELEMETRY=1 ;;
    *) echo "unknown argument $a (see the header of bench/gpu_bench.sh)" >&2; exit 2 ;;
  esac
done
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:$CUDA/targets/x86_64-linux/lib:$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
OUTDIR=${KILN_BENCH_OUT:-${OUT:-$ROOT/runs/gpu-bench}}
mkdir -p "$OUTDIR"
RES=$OUTDIR/results.jsonl
REF=$OUTDIR/refs.jsonl
LOG=$OUTDIR/bench.log
: >"$RES"; : >"$REF"; : >"$LOG"

WORKER=${KILN_WORKER:-$CARRY/bin/kiln-worker}
REF_GEMM=$CARRY/bin/ref_gemm
REF_COPY=$CARRY/bin/gpu_ref_copy
if [[ ! -x $REF_GEMM || ! -x $REF_COPY ]]; then
  echo "building the references here (no carried build)" | tee -a "$LOG"
  mkdir -p "$CARRY/bin"
  nvcc -O3 -arch=sm_90 -o "$REF_GEMM" bench/ref_gemm.cu -lcublas && nvcc -O3 -arch=sm_90 -o "$REF_COPY" bench/gpu_ref_copy.cu
fi
if [[ ! -x $WORKER ]]; then
  echo "no kiln-worker: run bench/gpu_bench.sh --prepare on the development machine and carry .carry/gpu" | tee -a "$LOG"
  exit 2
fi

if ((QUICK)); then
  RATIO_S=4; SUSTAIN_S=6; DRILL_S=4; WARM=1; MEMFRAC=0.2; WALK=2; FSDP_TOKENS=4096; FSDP_STEPS=5
else
  RATIO_S=15; SUSTAIN_S=60; DRILL_S=10; WARM=3; MEMFRAC=0.9; WALK=16; FSDP_TOKENS=8192; FSDP_STEPS=10
fi
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=index,name,driver_version,pstate,power.limit,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  nvidia-smi topo -m 2>/dev/null | head -5
} 2>&1 | tee -a "$LOG"

# worker LABEL [ENV=VAL ...] -- ARGS: runs kiln-worker standalone, tags each JSON line with LABEL.
worker() {
  local label=$1; shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  echo "-- $label: ${envs[*]} $*" >>"$LOG"
  local t0=$SECONDS
  env "${envs[@]}" "$WORKER" --standalone "$@" 2>>"$LOG" |
    python3 -c 'import sys,json
lab=sys.argv[1]
tel=open(3,"w")
for l in sys.stdin:
    l=l.strip()
    if not l.startswith("{"): print(l,file=sys.stderr); continue
    d=json.loads(l); d["bench"]=lab
    out=tel if str(d.get("metric","")).startswith("telemetry") else sys.stdout  # the node sampler: docs/telemetry.md
    print(json.dumps(d),file=out)' "$label" >>"$RES" 3>>"$OUTDIR/telemetry-standalone.jsonl"
  echo "   $label: $((SECONDS - t0)) s" | tee -a "$LOG"
}
ref() {
  local label=$1; shift
  "$@" 2>>"$LOG" | python3 -c 'import sys,json
for l in sys.stdin:
    d=json.loads(l); d["bench"]=sys.argv[1]; print(json.dumps(d))' "$label" >>"$REF"
}

BURN_P='"dtype":"bf16","size":8192,"warmup_s":'$WARM
SPEC2='"expected_gpus":'$NGPU',"expected_model":"H200"'

worker health.clean -- --tests gpu.health --params "{$SPEC2}" --deadline 60

# 0. The node health check (HealthCheckProgram mode): clean, then with a bit flip in its GEMM; the
# stack checks (versions, PCIe, system) and DCGM, read as root.
health_check() {
  local label=$1; shift
  local t0=$SECONDS
  env "$@" "$WORKER" --health-check --json >"$OUTDIR/$label.json" 2>>"$LOG"
  local rc=$?
  echo "   $label: exit $rc, $((SECONDS - t0)) s wall" | tee -a "$LOG"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("   ", json.dumps(d)[:1500])' "$OUTDIR/$label.json" | tee -a "$LOG"
}
health_check health_check.clean NCCL_NVLS_ENABLE=0
health_check health_check.bitflip 'KILN_FAULT={"gpu.burn":{"bitflip_gpu":'$((NGPU - 1))'}}'
# The periodic health plan (kiln run --profile health) as a whole campaign, one rank per GPU, with
# its report kept: the exit code and findings must follow the GPUs (clean: pass; bit flip: gpu.sdc).
health_profile() {
  local label=$1; shift
  local kbin=${KILN_CLI:-$CARRY/bin/kiln}
  [[ -x $kbin ]] || { echo "   $label: no kiln binary carried, skipped" | tee -a "$LOG"; return; }
  local dir=$OUTDIR/$label t0=$SECONDS
  env "$@" KILN_HISTORY=off "$kbin" run --profile health --launcher local --ranks "$NGPU" --worker "$WORKER" \
    --out "$dir" --quiet >>"$LOG" 2>&1
  local rc=$?
  echo "   $label: exit $rc, $((SECONDS - t0)) s wall" | tee -a "$LOG"
  python3 -c 'import json,sys
r = json.load(open(sys.argv[1] + "/report.json"))
print("    verdict", r.get("verdict"), "| findings:", [(f["code"], f["entity"]["id"]) for f in r.get("findings", [])])' \
    "$dir" 2>&1 | tee -a "$LOG"
}
health_profile health_profile.clean
health_profile health_profile.bitflip 'KILN_FAULT={"gpu.burn":{"bitflip_gpu":'$((NGPU - 1))'}}'
worker stack -- --tests stack.versions,stack.pci,stack.system,gpu.dcgm --deadline 60
grep '"bench": "stack"' "$RES" | python3 -c 'import sys,json
for l in sys.stdin:
    d=json.loads(l); print("   ", d.get("test"), d.get("metric"), d.get("status"), d.get("value"), (d.get("reason") or "")[:120], json.dumps(d.get("extra",{}))[:300])' | tee -a "$LOG"

# 1. GEMM: plain cuBLAS loop, burn, plain loop again (the two refs bracket the burn's thermals).
ref ref1 "$REF_GEMM" --dtype bf16 --size 8192 --seconds $RATIO_S --warmup $WARM
worker burn.ratio -- --tests gpu.burn --params "{$BURN_P,\"duration_s\":$((RATIO_S + WARM))}" --deadline $((RATIO_S + 120))
if ! grep -q '"bench": "burn.ratio"' "$RES" || ! grep '"bench": "burn.ratio"' "$RES" | grep -q '"metric": "tflops"'; then
  echo "gpu.burn produced no throughput: stopping here to save device time" | tee -a "$LOG"
  grep '"bench": "burn.ratio"' "$RES" | grep -v telemetry | tail -5
  exit 1
fi
ref ref2 "$REF_GEMM" --dtype bf16 --size 8192 --seconds $RATIO_S --warmup $WARM

# 2. Sustained burn, clean: must pass everywhere.
worker burn.sustained -- --tests gpu.burn --params "{$BURN_P,\"duration_s\":$((SUSTAIN_S + WARM))}" --deadline $((SUSTAIN_S + 120))

# 3. Drills.
worker drill.bitflip 'KILN_FAULT={"gpu.burn":{"bitflip_gpu":'$((NGPU - 1))'}}' -- \
  --tests gpu.burn --params "{$BURN_P,\"duration_s\":$DRILL_S}" --deadline 120
if ((NGPU > 1)); then
  worker drill.slow 'KILN_FAULT={"gpu.burn":{"slow_gpu":0,"slow_factor":0.5}}' -- \
    --tests gpu.burn --params "{$BURN_P,\"duration_s\":$DRILL_S}" --deadline 120
  worker drill.hidden CUDA_VISIBLE_DEVICES=1 -- \
    --tests gpu.health,gpu.burn --params "{\"gpu.health\":{$SPEC2},\"gpu.burn\":{$BURN_P,\"duration_s\":3}}" --deadline 90
fi
worker drill.memtest 'KILN_FAULT={"gpu.memtest":{"corrupt_gpu":0}}' -- \
  --tests gpu.memtest --params '{"mem_fraction":0.05,"walk_passes":2,"random_passes":1}' --deadline 120

# 4. Memory test over most of the memory, and its references.
worker memtest -- --tests gpu.memtest --params "{\"mem_fraction\":$MEMFRAC,\"walk_passes\":$WALK}" --deadline 300
ref refcopy "$REF_COPY" --d2d-mb 8192 --peer-mb 1024 --iters 10

# 5. Copy bandwidth and the health read after all the load (XIDs during the campaign).
worker copy -- --tests gpu.copy_bw --params '{"size_mb":1024,"iters":10}' --deadline 180
# 6. model.fsdp_step (mpirun, one rank per GPU) beside PyTorch FSDP with the same shape when torch
# is importable (bench/fsdp_compare.sh); its lines join results.jsonl and refs.jsonl.
FSDP_DIR=$OUTDIR/fsdp
bench/fsdp_compare.sh --worker "$WORKER" --np "$NGPU" --tokens $FSDP_TOKENS --steps $FSDP_STEPS --out "$FSDP_DIR" \
  2>&1 | tee -a "$LOG"
python3 -c 'import sys,json
for path, lab, out in ((sys.argv[1], "fsdp", sys.argv[3]), (sys.argv[2], "fsdp_ref", sys.argv[4])):
    with open(out, "a") as o:
        for l in open(path):
            if l.startswith("{"):
                d = json.loads(l); d["bench"] = lab; o.write(json.dumps(d) + "\n")' \
  "$FSDP_DIR/kiln.jsonl" "$FSDP_DIR/torch.jsonl" "$RES" "$REF"

worker health.after -- --tests gpu.health --params "{$SPEC2}" --deadline 60

# 7. Optional: a 60 s burn as a campaign, with the node's 1 Hz telemetry plotted in report.html.
TEL_LINE=""
if ((TELEMETRY)); then
  KILN_BIN=${KILN_CLI:-$CARRY/bin/kiln}
  TDIR=$OUTDIR/telemetry-campaign
  t0=$SECONDS
  KILN_HISTORY=off KILN_TELEMETRY_INTERVAL=1 "$KILN_BIN" run --launcher local --ranks 1 --worker "$WORKER" \
    --out "$TDIR" --tests gpu.burn --params "{\"gpu.burn\":{$BURN_P,\"duration_s\":60}}" --quiet >>"$LOG" 2>&1
  echo "   telemetry campaign: exit $?, $((SECONDS - t0)) s" | tee -a "$LOG"
  [[ -s $TDIR/report.html ]] && cp "$TDIR/report.html" "$OUTDIR/telemetry-report.html"
  TEL_LINE=$(python3 bench/telemetry_summary.py "$TDIR/results.jsonl" gpu.burn 2>&1)
fi

python3 bench/gpu_bench_table.py "$RES" "$REF" | tee "$OUTDIR/table.txt"
[[ -n $TEL_LINE ]] && echo "$TEL_LINE" | tee -a "$OUTDIR/table.txt"
