#!/usr/bin/env bash
# One visit to the multi-GPU machine for the NCCL work: a whole campaign through the coordinator,
# the all_reduce setup A/B (bench/nccl_ab.sh), then the 8 B..8 GiB sweeps beside nccl-tests with the
# best setup (bench/nccl_bench.sh). Prints the tables last.
#
#   bench/nccl_visit.sh --carry DIR --ref-mpi NT_DIR [--wait-ref FILE]
#
#   --carry DIR     holds bin/kiln, bin/kiln-worker and lib/ (libraries the GPU machine lacks)
#   --ref-mpi DIR   nccl-tests built with MPI=1 (built elsewhere, never by this repository); run
#                   both under mpirun -np N -g 1 and as one process -g N
#   --wait-ref FILE wait (up to 300 s) for FILE to exist before using --ref-mpi
# Output under $OUT (else runs/nccl-visit): run/ (the campaign), logs/, ab/, sweep_*/.
set -uo pipefail
CARRY="" REF_MPI="" WAIT_REF=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --carry) CARRY=$2; shift 2 ;;
    --ref-mpi) REF_MPI=$2; shift 2 ;;
    --wait-ref) WAIT_REF=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:/usr/local/cuda-13.0/targets/x86_64-linux/lib:$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
HERE=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-runs/nccl-visit}
mkdir -p "$O/logs"
NP=$(nvidia-smi -L | grep -c '^GPU')
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv,noheader
ldd "$CARRY/bin/kiln-worker" | grep "not found" && echo "missing libraries" >&2

echo "== campaign through the coordinator (local launcher, $NP ranks)"
t0=$(date +%s)
PARAMS='{"gpu.burn":{"duration_s":20,"warmup_s":3},"gpu.copy_bw":{"size_mb":256,"iters":5},
"nccl.all_reduce":{"max_bytes":"64M","factor":4,"check":true},"nccl.all_gather":{"max_bytes":"64M","factor":4,"check":true},
"mpi.all_reduce":{"max_bytes":1048576}}'
"$CARRY/bin/kiln" run --launcher local --ranks "$NP" --worker "$CARRY/bin/kiln-worker" --out "$O/run" --deadline 90 \
  --tests host.inventory,gpu.health,gpu.burn,gpu.copy_bw,nccl.all_reduce,nccl.all_gather,mpi.all_reduce \
  --params "$PARAMS" >"$O/logs/campaign.out" 2>"$O/logs/campaign.err"
echo "kiln run exit $? after $(( $(date +%s) - t0 )) s"
tail -n 25 "$O/logs/campaign.out"
grep -m3 -n "mpirun" "$O/run/workers.log" 2>/dev/null | head -3
cp "$O/run/workers.log" "$O/logs/" 2>/dev/null

if [[ -n $WAIT_REF ]]; then
  for _ in $(seq 300); do [[ -e $WAIT_REF ]] && break; sleep 1; done
fi
[[ -x $REF_MPI/all_reduce_perf ]] || { echo "no nccl-tests in $REF_MPI"; exit 1; }

echo "== all_reduce setup A/B"
"$HERE/nccl_ab.sh" --worker "$CARRY/bin/kiln-worker" --ref-mpi "$REF_MPI" --np "$NP" --reps 2 --out "$O/ab" 2>&1
# shellcheck disable=SC1091
source "$O/ab/chosen.env"
echo "== sweeps with $CHOSEN (NCCL_RUNTIME_CONNECT=$NCCL_RUNTIME_CONNECT)"
export REF_PREFIX="mpirun -np 1 --allow-run-as-root -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH"
"$HERE/nccl_bench.sh" --worker "$CARRY/bin/kiln-worker" --ref "$REF_MPI" --ref-mpi "$REF_MPI" --np "$NP" \
  --colls all_reduce --reps 2 --no-checks --no-drill --kiln-params "$CHOSEN_PARAMS" --out "$O/sweep_ar" 2>&1 | tail -n 80
"$HERE/nccl_bench.sh" --worker "$CARRY/bin/kiln-worker" --ref "$REF_MPI" --ref-mpi "$REF_MPI" --np "$NP" \
  --colls all_gather,reduce_scatter --reps 1 --no-checks --no-drill --kiln-params "$CHOSEN_PARAMS" --out "$O/sweep_agrs" 2>&1 | tail -n 140
python3 - "$O/run/report.json" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("no report:", e); sys.exit()
print("== campaign report:", {k: r[k] for k in r if isinstance(r[k], (str, int, float, bool))})
EOF
cat "$O/ab/ab_table.txt"
