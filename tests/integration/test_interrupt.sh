#!/usr/bin/env bash
# Ctrl-C (SIGINT) or SIGTERM mid-campaign: kiln stops its workers, keeps the results it had,
# writes the report with verdict error, and exits 2.
source "$(dirname "$0")/lib.sh"
for sig in INT TERM; do
  OUT="$TMP/run-$sig"
  "$KILN" run --launcher local --ranks 2 --out "$OUT" \
    --tests host.inventory,mpi.all_reduce,mpi.all_reduce,mpi.all_reduce,mpi.all_reduce,mpi.all_reduce \
    > "$OUT.summary" 2> "$OUT.stderr" &
  pid=$!
  for _ in $(seq 300); do grep -q "round 2" "$OUT.stderr" 2>/dev/null && break; sleep 0.1; done
  kill -$sig $pid
  wait $pid
  rc=$?
  [ $rc -eq 2 ] && pass "SIG$sig: exit 2" || { bad "SIG$sig: exit $rc"; cat "$OUT.stderr"; }
  python3 - "$OUT" "$sig" <<'PY' && pass "SIG$sig: report says interrupted, results kept" || bad "SIG$sig: report"
import json, sys
out = sys.argv[1]
rep = json.load(open(out + "/report.json"))
assert rep["verdict"] == "error" and "interrupted" in rep["error"], rep.get("error")
rows = [json.loads(l) for l in open(out + "/results.jsonl")]
assert any(r["test"] == "host.inventory" for r in rows)
PY
  sleep 0.5
  pgrep -f "$WORKER" >/dev/null && bad "SIG$sig: workers left behind" || pass "SIG$sig: no workers left"
done
finish
