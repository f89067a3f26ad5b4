#!/usr/bin/env bash
# model.fsdp_step on a machine without a usable GPU (or a build without NCCL): every rank reports
# SKIP with the reason it cannot run, never PASS, and the worker exits normally.
source "$(dirname "$0")/lib.sh"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: this machine has a GPU; the SKIP path is for machines without one"
  exit 77
fi
mpirun -np 2 --oversubscribe "$WORKER" --standalone --tests model.fsdp_step \
  --params '{"layers":2,"hidden":256,"tokens":256}' --deadline 60 > "$TMP/out.jsonl" 2> "$TMP/err.txt"
rc=$?
[ $rc -eq 0 ] && pass "kiln-worker exits 0" || { bad "kiln-worker exit $rc"; cat "$TMP/err.txt"; }
python3 - "$TMP/out.jsonl" <<'PY' && pass "model.fsdp_step reports SKIP with its reason on every rank" || bad "SKIP contract"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
mine = [r for r in rows if r.get("test") == "model.fsdp_step"]
ends = [r for r in mine if r.get("record") == "end"]
assert sorted(r["rank"] for r in ends) == [0, 1], ends
for r in ends:
    assert r["status"] == "skip", r
    reason = r.get("reason", "")
    assert any(w in reason for w in ("GPU", "NCCL", "CUDA")), f"reason does not say why: {reason!r}"
# The node's telemetry taken while the check was tried (docs/telemetry.md) is no verdict on it.
verdicts = [r for r in mine if not r.get("metric", "").startswith("telemetry")]
assert not [r for r in verdicts if r.get("status") == "pass"], "a PASS without a GPU"
PY
# A spec that gives the step a figure requires it: skipped here, the node is not.tested and the
# campaign incomplete (exit 1), never a pass.
cat > "$TMP/spec.toml" <<TOML
[[class]]
name = "gpu"
hosts = "$(hostname -s)"
[class.figures."model.fsdp_step".intra]
tflops = { value = 600, tolerance = 0.10, source = "test figure" }
TOML
KILN_HISTORY=off "$KILN" run --launcher local --ranks 1 --out "$TMP/spec-run" --tests model.fsdp_step \
  --spec "$TMP/spec.toml" > "$TMP/spec.txt" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "INCOMPLETE" "$TMP/spec.txt" && grep -q "not.tested node .*: model.fsdp_step was not tested" "$TMP/spec.txt" \
  && pass "a spec's model.fsdp_step figure: not.tested, INCOMPLETE, exit 1" || { bad "spec run: exit $rc"; cat "$TMP/spec.txt"; }
finish
