#!/usr/bin/env bash
# A/B of how kiln's nccl.all_reduce sets itself up, between 512 KiB and 8 GiB (buffers of 8 GiB, as in the full sweeps), beside nccl-tests
# measured in the same run (one process per GPU under mpirun, and one process with -g N).
#
#   bench/nccl_ab.sh --worker PATH --ref-mpi DIR [--np N] [--reps N] [--iters N] [--out DIR]
#
# Variants (kiln params "buffers" and "comm", and NCCL_RUNTIME_CONNECT):
#   cuda_split_rc0   cudaMalloc buffers, blocking child split off a non-blocking parent, all
#                    connections at init (kiln before this A/B)
#   nccl_split_rc0   ncclMemAlloc buffers (what nccl-tests uses), otherwise the same
#   cuda_direct_rc0  one blocking communicator from ncclCommInitRank (as nccl-tests), cudaMalloc
#   nccl_direct_rc1  nccl-tests' setup: ncclMemAlloc, ncclCommInitRank, NCCL's lazy connection
#   nccl_split_rc1   ncclMemAlloc, split child, lazy connection
# Then one run of each side at 4 MiB with NCCL_DEBUG_SUBSYS=TUNING, to compare NCCL's choice.
# Prints a table of ratios (kiln busbw / nccl-tests MPI busbw, best of --reps) and writes the best
# variant's settings to OUT/chosen.env (read by the caller for the full sweeps).
# Always runs with NCCL_NVLS_ENABLE=0.
set -uo pipefail

WORKER=build/bin/kiln-worker REF_MPI="" NP="" REPS=2 ITERS=30 OUTDIR=${OUT:-runs/nccl-ab}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --worker) WORKER=$2; shift 2 ;;
    --ref-mpi) REF_MPI=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --out) OUTDIR=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
export NCCL_NVLS_ENABLE=0
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUTDIR"
[[ -n $NP ]] || NP=$(nvidia-smi -L | grep -c '^GPU')
MPIRUN=(mpirun -np "$NP" --bind-to none -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH)
[[ $(id -u) -eq 0 ]] && MPIRUN+=(--allow-run-as-root)

VARIANTS="cuda_split_rc0 nccl_split_rc0 cuda_direct_rc0 nccl_direct_rc1 nccl_split_rc1"
kiln_variant() {  # VARIANT PARAMS_EXTRA OUTFILE
  local v=$1 buf comm rc
  IFS=_ read -r buf comm rc <<<"$v"
  local params="{\"buffers\":\"$buf\",\"comm\":\"$comm\",\"placement\":\"out\",\"iters\":$ITERS,\"warmup\":5,$2}"
  NCCL_RUNTIME_CONNECT=${rc#rc} timeout -k 5 120 "${MPIRUN[@]}" -x NCCL_RUNTIME_CONNECT ${EXTRA_X:-} "$WORKER" --standalone \
    --tests nccl.all_reduce --params "$params" --deadline 100 >"$3" 2>"$3.err" || echo "kiln $v failed: see $3.err" >&2
}
NT=(-b 512K -e 8G -f 2 -n "$ITERS" -w 5 -c 0)
for r in $(seq 1 "$REPS"); do
  echo "A/B rep $r ..." >&2
  timeout -k 5 120 "${MPIRUN[@]}" "$REF_MPI/all_reduce_perf" "${NT[@]}" -g 1 -J "$OUTDIR/ab_refmpi_$r.json" >"$OUTDIR/ab_refmpi_$r.txt" 2>&1 || echo "ref mpi failed" >&2
  timeout -k 5 120 mpirun -np 1 --allow-run-as-root -x NCCL_NVLS_ENABLE "$REF_MPI/all_reduce_perf" "${NT[@]}" -g "$NP" -J "$OUTDIR/ab_refg_$r.json" >"$OUTDIR/ab_refg_$r.txt" 2>&1 || echo "ref -g failed" >&2
  for v in $VARIANTS; do kiln_variant "$v" '"min_bytes":"512K","max_bytes":"8G"' "$OUTDIR/ab_${v}_$r.jsonl"; done
done

# NCCL's choice at 4 MiB on each side.
(
  export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING
  EXTRA_X="-x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS" ITERS=3 kiln_variant cuda_split_rc0 '"min_bytes":"4M","max_bytes":"4M"' "$OUTDIR/tuning_kiln.jsonl"
  timeout -k 5 60 "${MPIRUN[@]}" -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS "$REF_MPI/all_reduce_perf" -b 4M -e 4M -n 3 -w 1 -c 0 -g 1 >"$OUTDIR/tuning_ref.txt" 2>&1
)
for f in "$OUTDIR/tuning_kiln.jsonl.err" "$OUTDIR/tuning_kiln.jsonl" "$OUTDIR/tuning_ref.txt"; do
  echo "-- $(basename "$f"): NCCL TUNING lines for 4194304 B (first 3)"
  grep -h "4194304" "$f" 2>/dev/null | grep -i "algo\|proto\|channel" | head -3
done

HERE=$HERE python3 - "$OUTDIR" "$REPS" $VARIANTS <<'EOF' | tee "$OUTDIR/ab_table.txt"
import json, sys, glob, os
sys.path.insert(0, os.environ.get("HERE", "bench"))
out, reps, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
from nccl_compare import load_kiln, load_ref, human
ref = load_ref(sorted(glob.glob(f"{out}/ab_refmpi_*.json")), "out")
refg = load_ref(sorted(glob.glob(f"{out}/ab_refg_*.json")), "out")
k = {v: load_kiln(sorted(glob.glob(f"{out}/ab_{v}_*.jsonl")), "out") for v in variants}
sizes = sorted(ref)
print("\nall_reduce out-of-place, time us (best of runs); ratio = kiln busbw / nccl-tests MPI busbw")
print(f"{'size':>6} {'MPI us':>8} {'-g us':>8} " + " ".join(f"{v:>16}" for v in variants))
for s in sizes:
    row = f"{human(s):>6} {ref[s][1]:8.2f} {refg.get(s, (0, float('nan')))[1]:8.2f} "
    for v in variants:
        if s in k[v]:
            row += f" {k[v][s][1]:8.2f} ({k[v][s][0] / ref[s][0]:5.3f})"
        else:
            row += f" {'-':>16}"
    print(row)
score = {}
for v in variants:
    rs = [k[v][s][0] / ref[s][0] for s in sizes if s >= (1 << 20) and s <= (32 << 20) and s in k[v]]
    score[v] = min(rs) if rs else 0
    print(f"{v}: worst ratio 1..32 MiB {score[v]:.3f}, mean {sum(rs) / max(1, len(rs)):.3f}")
# Prefer the bounded-init split variants unless a direct one is clearly better.
best = max(variants, key=lambda v: score[v] + (0.003 if "_split_" in v else 0))
buf, comm, rc = best.split("_")
print(f"chosen: {best}")
with open(f"{out}/chosen.env", "w") as f:
    f.write(f"CHOSEN={best}\nCHOSEN_PARAMS='\"buffers\":\"{buf}\",\"comm\":\"{comm}\"'\nexport NCCL_RUNTIME_CONNECT={rc[2:]}\n")
EOF
