#!/usr/bin/env bash
# Checks and times kiln's nccl.* tests on one multi-GPU host, beside nccl-tests measured in the same
# run, and prints the side-by-side tables last.
#
#   bench/nccl_bench.sh --worker build/bin/kiln-worker --ref /path/to/nccl-tests/build [options]
#
#   --worker PATH   kiln-worker to run (env KILN_WORKER; default build/bin/kiln-worker)
#   --ref DIR       directory holding all_reduce_perf, all_gather_perf, reduce_scatter_perf, built
#                   elsewhere from nccl-tests' public source (env NCCL_TESTS_BUILD). This script
#                   never builds it. Without it, only the checks and the drill run.
#                   (env REF_PREFIX: a launcher put before it, e.g. "mpirun -np 1" for an MPI=1 build)
#   --ref-mpi DIR   the same binaries built with MPI=1 (env NCCL_TESTS_MPI_BUILD): run as kiln runs,
#                   one process per GPU under mpirun (-g 1), and compared in a second table
#   --np N          ranks = GPUs (default: number of GPUs nvidia-smi lists)
#   --max SIZE      largest size of the timed sweep (default 8G; the sweep starts at 8 B, factor 2)
#   --reps N        runs of each side per collective, interleaved; best per size is compared (default 2)
#   --iters N --warmup N   per line, both sides (default 20 and 5)
#   --colls LIST    collectives timed against the reference (default all_reduce,all_gather,reduce_scatter)
#   --out DIR       where logs and JSON go (default $OUT, else ./runs/nccl-bench-<time>)
#   --kiln-params 'K:V,...'   extra members of kiln's params object for the timed sweeps,
#                   e.g. '"buffers":"cuda","comm":"split"' (see bench/nccl_ab.sh)
#   --no-checks / --no-drill / --no-timing   leave a part out
#
# Always runs with NCCL_NVLS_ENABLE=0 (NVLink multicast must stay off on the shared GPU machines).
set -euo pipefail

WORKER=${KILN_WORKER:-build/bin/kiln-worker}
REF=${NCCL_TESTS_BUILD:-}
REF_MPI=${NCCL_TESTS_MPI_BUILD:-}
NP=""
MAX=8G
REPS=2
ITERS=20
WARMUP=5
COLLS=all_reduce,all_gather,reduce_scatter
OUTDIR=${OUT:-}
DO_CHECKS=1 DO_DRILL=1 DO_TIMING=1
KILN_EXTRA=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --worker) WORKER=$2; shift 2 ;;
    --ref) REF=$2; shift 2 ;;
    --ref-mpi) REF_MPI=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --max) MAX=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --colls) COLLS=$2; shift 2 ;;
    --out) OUTDIR=$2; shift 2 ;;
    --kiln-params) KILN_EXTRA=$2; shift 2 ;;
    --no-checks) DO_CHECKS=0; shift ;;
    --no-drill) DO_DRILL=0; shift ;;
    --no-timing) DO_TIMING=0; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

export NCCL_NVLS_ENABLE=0
HERE=$(cd "$(dirname "$0")" && pwd)
OUTDIR=${OUTDIR:-runs/nccl-bench-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUTDIR"
[[ -x $WORKER ]] || { echo "no kiln-worker at $WORKER" >&2; exit 2; }
if [[ -z $NP ]]; then NP=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
[[ ${NP:-0} -ge 2 ]] || { echo "need at least 2 GPUs (found ${NP:-0})" >&2; exit 2; }

MPIRUN=(mpirun -np "$NP" --bind-to none -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH)
[[ $(id -u) -eq 0 ]] && MPIRUN+=(--allow-run-as-root)
SUMMARY=$OUTDIR/summary.txt
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

say "# host: $(hostname)  GPUs: $NP  worker: $WORKER  ref: ${REF:-none}"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,power.limit --format=csv,noheader | tee -a "$SUMMARY" || true
nvidia-smi topo -m 2>/dev/null | head -n $((NP + 1)) | tee -a "$SUMMARY" || true

kiln() {  # kiln TESTS PARAMS DEADLINE OUTFILE
  # The worker keeps its own deadlines; the outer timeout is only a backstop for this script.
  local n_tests; n_tests=$(awk -F, '{print NF}' <<<"$1")
  timeout -k 10 $(( ${3%.*} * n_tests + 60 )) "${MPIRUN[@]}" ${KILN_FAULT:+-x KILN_FAULT} "$WORKER" --standalone --tests "$1" --params "$2" \
    --deadline "$3" >"$4" 2>"$4.err" || echo "kiln-worker exited with $? ($1), see $4.err" >&2
}

if [[ $DO_CHECKS -eq 1 ]]; then
  say ""
  say "== data check: every collective, in and out of place, 8 B .. 64 MiB by 8, check=true"
  ALL=nccl.all_reduce,nccl.all_gather,nccl.reduce_scatter,nccl.alltoall,nccl.broadcast,nccl.sendrecv
  kiln "$ALL" '{"min_bytes":8,"max_bytes":"64M","factor":8,"iters":5,"warmup":1,"check":true}' 120 "$OUTDIR/check.jsonl"
  python3 - "$OUTDIR/check.jsonl" <<'EOF' | tee -a "$SUMMARY"
import json, sys, collections
lines = collections.Counter(); wrong = collections.Counter(); status = {}
for l in open(sys.argv[1]):
    if not l.startswith("{"): continue
    r = json.loads(l)
    if r.get("metric") == "busbw":
        lines[r["test"]] += 1; wrong[r["test"]] += r.get("extra", {}).get("wrong_elements", 0)
    if r.get("record") == "end":
        status.setdefault(r["test"], set()).add(r["status"])
for t in sorted(status):
    print(f"{t:22} lines checked {lines[t]:3}  wrong elements {wrong[t]:>4}  status {','.join(sorted(status[t]))}")
EOF
fi

if [[ $DO_DRILL -eq 1 ]]; then
  say ""
  say "== drill: world rank 1 never joins nccl.all_reduce at 1 MiB (deadline 20 s), then nccl.all_gather runs"
  t0=$(date +%s.%N)
  KILN_FAULT='{"nccl":{"hang_rank":1,"test":"nccl.all_reduce","at_bytes":1048576}}' \
    kiln nccl.all_reduce,nccl.all_gather '{"min_bytes":"64K","max_bytes":"16M","factor":4,"iters":5,"warmup":1,"check":true}' 20 "$OUTDIR/drill.jsonl"
  t1=$(date +%s.%N)
  python3 - "$OUTDIR/drill.jsonl" "$t0" "$t1" <<'EOF' | tee -a "$SUMMARY"
import json, sys
for l in open(sys.argv[1]):
    if not l.startswith("{"): continue
    r = json.loads(l)
    if r.get("record") == "end" or r["metric"] in ("hang", "state"):
        print(f"{r['test']:16} rank {r['rank']} {r.get('metric', 'end'):6} {r['status']:8} {r.get('reason', '')[:160]}")
        if r.get("metric") == "hang":
            e = r.get("extra", {})
            print(f"{'':16} unfinished {e.get('unfinished_ranks')} never joined {e.get('not_joined_ranks')} no reply {e.get('no_reply_ranks')}")
print(f"whole drill run: {float(sys.argv[3]) - float(sys.argv[2]):.1f} s")
EOF
fi

if [[ $DO_TIMING -eq 1 && ( -n $REF || -n $REF_MPI ) ]]; then
  PARAMS="{\"min_bytes\":8,\"max_bytes\":\"$MAX\",\"factor\":2,\"iters\":$ITERS,\"warmup\":$WARMUP${KILN_EXTRA:+,$KILN_EXTRA}}"
  IFS=, read -r -a CL <<<"$COLLS"
  for c in "${CL[@]}"; do
    for r in $(seq 1 "$REPS"); do
      echo "timing $c run $r ..." >&2
      rm -f "$OUTDIR/ref_${c}_$r.json" "$OUTDIR/refmpi_${c}_$r.json"
      NT_ARGS=(-b 8 -e "$MAX" -f 2 -n "$ITERS" -w "$WARMUP" -c 0)
      if [[ -n $REF ]]; then
        timeout -k 10 600 ${REF_PREFIX:-} "$REF/${c}_perf" "${NT_ARGS[@]}" -g "$NP" -J "$OUTDIR/ref_${c}_$r.json" \
          >"$OUTDIR/ref_${c}_$r.txt" 2>&1 || echo "nccl-tests $c failed, see $OUTDIR/ref_${c}_$r.txt" >&2
      fi
      if [[ -n $REF_MPI ]]; then
        timeout -k 10 600 "${MPIRUN[@]}" "$REF_MPI/${c}_perf" "${NT_ARGS[@]}" -g 1 -J "$OUTDIR/refmpi_${c}_$r.json" \
          >"$OUTDIR/refmpi_${c}_$r.txt" 2>&1 || echo "nccl-tests (MPI) $c failed, see $OUTDIR/refmpi_${c}_$r.txt" >&2
      fi
      kiln "nccl.$c" "$PARAMS" 600 "$OUTDIR/kiln_${c}_$r.jsonl"
    done
  done
  for c in "${CL[@]}"; do
    if [[ -n $REF ]]; then
      python3 "$HERE/nccl_compare.py" --name "$c vs nccl-tests, 1 process -g $NP" --kiln "$OUTDIR"/kiln_"$c"_*.jsonl \
        --ref "$OUTDIR"/ref_"$c"_*.json --summary "$OUTDIR/compare.jsonl" | tee -a "$SUMMARY" || true
    fi
    if [[ -n $REF_MPI ]]; then
      python3 "$HERE/nccl_compare.py" --name "$c vs nccl-tests, mpirun -np $NP -g 1" --kiln "$OUTDIR"/kiln_"$c"_*.jsonl \
        --ref "$OUTDIR"/refmpi_"$c"_*.json --summary "$OUTDIR/compare.jsonl" | tee -a "$SUMMARY" || true
    fi
  done
fi
echo "logs and JSON in $OUTDIR" >&2
