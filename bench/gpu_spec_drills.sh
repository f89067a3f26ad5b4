#!/usr/bin/env bash
# Judging against a spec on a GPU machine (issue 12's GPU drills), each a whole campaign:
#   clean    the shipped H200 profile, adapted to this machine (its GPU count, this host, no HCA
#            lines): must pass, exit 0
#   p2p-off  the same with NCCL_P2P_DISABLE=1 (NCCL through host memory): spec.below on the NCCL
#            figures with measured and expected values, exit 1
#   eight    a spec expecting 8 GPUs: gpu.count, exit 1
#   baseline kiln spec from-run on the clean run, then GPU 0 slowed by the fault switch, judged
#            against that baseline: findings for GPU 0 only
#
#   bench/gpu_spec_drills.sh --carry DIR     (DIR holds bin/kiln, bin/kiln-worker, lib/)
set -uo pipefail
source "$(dirname "$0")/gpu_carry.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
O=${OUT:-runs/gpu-spec}
mkdir -p "$O"
NP=$(nvidia-smi -L | grep -c '^GPU')
HOST=$(hostname -s)
TESTS=gpu.health,gpu.burn,gpu.memtest,gpu.copy_bw,nccl.all_reduce
PARAMS='{"gpu.burn":{"duration_s":12},"nccl.all_reduce":{"min_bytes":1048576,"max_bytes":1073741824}}'
sed -e "s/^match_hardware = true.*/hosts = \"$HOST\"/" -e "s/^gpus_per_node = 8/gpus_per_node = $NP/" \
    -e '/^hcas_per_node/d' -e '/^hca_rate_gbps/d' "$ROOT/profiles/hgx-h200-8gpu.toml" > "$O/h200-here.toml"
sed -e "s/^gpus_per_node = $NP/gpus_per_node = 8/" "$O/h200-here.toml" > "$O/h200-eight.toml"
"$CARRY/bin/kiln" spec check "$O/h200-here.toml" "$O/h200-eight.toml"

campaign() {  # NAME SPEC [ENV...]
  local name=$1 spec=$2
  shift 2
  env "$@" "$CARRY/bin/kiln" run --launcher local --ranks "$NP" --worker "$CARRY/bin/kiln-worker" --out "$O/$name" \
    --tests "$TESTS" --params "$PARAMS" --spec "$spec" --localize-by off > "$O/$name.out" 2> "$O/$name.err"
  local rc=$?
  python3 - "$O/$name/report.json" "$name" "$rc" <<'PY' | tee -a "$O/summary.txt"
import json, sys
rep = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:9s} exit {sys.argv[3]} verdict {rep['verdict']:10s} findings: {len(rep['findings'])}")
for f in rep["findings"]:
    print(f"    {f['code']:14s} {f['entity']['kind']} {f['entity']['id']}: {f['summary'][:170]}")
PY
  grep -i "judged\|spec\|profile" "$O/$name.out" | head -3 | sed 's/^/    summary: /' | tee -a "$O/summary.txt"
}

: > "$O/summary.txt"
campaign clean "$O/h200-here.toml"
campaign p2p-off "$O/h200-here.toml" NCCL_P2P_DISABLE=1
campaign eight "$O/h200-eight.toml"
"$CARRY/bin/kiln" spec from-run "$O/clean" --out "$O/baseline.toml" --name here
campaign slowgpu "$O/baseline.toml" KILN_FAULT='{"gpu.burn":{"slow_gpu":0,"slow_factor":0.5}}'
echo "== judged against a spec"
cat "$O/summary.txt"
