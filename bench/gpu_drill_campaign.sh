#!/usr/bin/env bash
# The GPU drills through a whole campaign (coordinator, local launcher, report), on a GPU machine:
# each drill must end as a finding for the right GPU in report.json, and the clean run as none.
#
#   bench/gpu_drill_campaign.sh --carry DIR     (DIR holds bin/kiln, bin/kiln-worker, lib/)
#
# Drills (KILN_FAULT is a test aid, see docs/gpu-tests.md): a bit flip in GPU 1's GEMM output, GPU 0
# slowed to half speed, GPU 0 hidden with CUDA_VISIBLE_DEVICES against a spec expecting all GPUs.
set -uo pipefail
source "$(dirname "$0")/gpu_carry.sh"
O=${OUT:-runs/gpu-drills}
mkdir -p "$O"
NP=$(nvidia-smi -L | grep -c '^GPU')
PARAMS="{\"gpu.health\":{\"expected_gpus\":$NP},\"gpu.burn\":{\"duration_s\":12}}"
SUMMARY="$O/drills.txt"
: > "$SUMMARY"

drill() {
  local name=$1
  shift
  local t0=$SECONDS
  env "$@" "$CARRY/bin/kiln" run --launcher local --ranks 1 --worker "$CARRY/bin/kiln-worker" --out "$O/$name" \
    --tests gpu.health,gpu.burn --params "$PARAMS" --quiet > "$O/$name.out" 2> "$O/$name.err"
  local rc=$?
  python3 - "$O/$name/report.json" "$name" "$rc" "$((SECONDS - t0))" <<'PY' | tee -a "$SUMMARY"
import json, sys
rep = json.load(open(sys.argv[1]))
name, rc, secs = sys.argv[2], sys.argv[3], sys.argv[4]
print(f"{name:8s} exit {rc} verdict {rep['verdict']:5s} {secs:>3s} s  findings: {len(rep['findings'])}")
for f in rep["findings"]:
    print(f"    {f['code']:14s} {f['entity']['kind']} {f['entity']['id']}: {f['summary'][:150]}")
rows = [json.loads(l) for l in open(sys.argv[1].replace('report.json', 'results.jsonl'))]
for r in rows:
    if r["test"] == "gpu.burn" and r.get("metric") == "tflops":
        print(f"    tflops {r['entity']['id']}: {r['value']:.1f} {r['status']}")
PY
}

drill clean
drill bitflip KILN_FAULT='{"gpu.burn":{"bitflip_gpu":1}}'
drill slowgpu KILN_FAULT='{"gpu.burn":{"slow_gpu":0,"slow_factor":0.5}}'
drill hidden CUDA_VISIBLE_DEVICES=$((NP - 1))
echo "== drills through the campaign"
cat "$SUMMARY"
