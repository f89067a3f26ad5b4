#!/usr/bin/env bash
# Where no GPU or RDMA device is visible, the GPU, NCCL and RDMA tests run through a whole
# campaign and report SKIP with a reason, never PASS, and the campaign completes.
#
# Since issue 12 a verdict means what an operator thinks: this run has no spec and no shipped
# profile matches a node without GPUs, so nothing was judged against expectations. Its verdict
# stays pass (exit 0: no finding among the peers), and the report and the summary must now say
# that nothing was judged, so the pass is not read as "the GPUs are fine". With a spec that
# requires GPUs the same campaign is incomplete, exit 1 (test_judge_spec.sh).
source "$(dirname "$0")/lib.sh"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: this machine has a GPU; the SKIP path is for machines without one"
  exit 77
fi
TESTS=gpu.health,gpu.burn,gpu.memtest,gpu.copy_bw,model.fsdp_step,nccl.all_reduce,nccl.all_gather,nccl.reduce_scatter,nccl.alltoall,nccl.broadcast,nccl.sendrecv,rdma.write_bw,rdma.read_bw,rdma.send_lat,ib.ports
OUT="$TMP/run"
"$KILN" run --launcher local --ranks 2 --out "$OUT" --quiet --tests "$TESTS" > "$TMP/summary.txt" 2>&1
rc=$?
[ $rc -eq 0 ] && pass "campaign completes (exit 0)" || { bad "campaign exit $rc"; cat "$TMP/summary.txt" "$OUT/workers.log"; }
python3 - "$OUT" "$TESTS" <<'PY' && pass "every GPU/NCCL/RDMA test reported SKIP with a reason" || bad "SKIP contract"
import json, sys
out, tests = sys.argv[1], sys.argv[2].split(",")
rows = [json.loads(l) for l in open(out + "/results.jsonl")]
for t in tests:
    st = [r for r in rows if r["test"] == t and r["record"] == "end"]
    assert st, f"{t}: the check never ended"
    for r in st:
        assert r["status"] == "skip", f"{t} rank {r['rank']}: {r['status']}"
        assert r.get("reason"), f"{t} rank {r['rank']}: SKIP without a reason"
    # The node's telemetry taken while the check was tried (docs/telemetry.md) is no verdict on it.
    verdicts = [r for r in rows if r["test"] == t and not r.get("metric", "").startswith("telemetry")]
    assert not [r for r in verdicts if r["status"] == "pass"], f"{t}: a PASS without hardware"
rep = json.load(open(out + "/report.json"))
assert rep["verdict"] == "pass" and rep["findings"] == []
assert rep["expectations"]["source"] == "none", rep["expectations"]
assert all(set(rep["checks"][t]) == {"skip"} for t in tests), rep["checks"]
PY
grep -q "no spec and no matching profile: nothing was judged against expectations" "$TMP/summary.txt" \
  && pass "the summary says nothing was judged against expectations" || bad "summary lacks the expectations line"
finish
