#!/usr/bin/env bash
# kiln run --launcher local --ranks 4: results from all 4 ranks reach results.jsonl and report.json.
source "$(dirname "$0")/lib.sh"
OUT="$TMP/run"
"$KILN" run --launcher local --ranks 4 --out "$OUT" --quiet --tests host.inventory,mpi.all_reduce \
  --params '{"mpi.all_reduce":{"max_bytes":1048576}}' > "$TMP/summary.txt" 2> "$TMP/stderr.txt"
rc=$?
[ $rc -eq 0 ] && pass "campaign exit 0" || { bad "campaign exit $rc"; cat "$TMP/summary.txt" "$TMP/stderr.txt" "$OUT/workers.log"; }
python3 - "$OUT" <<'PY' && pass "results.jsonl and report.json hold all 4 ranks" || bad "results/report content"
import json, sys
out = sys.argv[1]
lines = [json.loads(l) for l in open(out + "/results.jsonl")]
rows = [r for r in lines if r["record"] == "result"]
ends = [r for r in lines if r["record"] == "end"]
need = {"test", "host", "rank", "metric", "value", "unit", "status"}
assert all(need <= r.keys() for r in rows), "a result lacks a required field"
# Every check ends once per rank that ran it: host.inventory on the one node, mpi.all_reduce on 4.
assert sorted((e["test"], e["rank"]) for e in ends) == [("host.inventory", 0)] + [("mpi.all_reduce", r) for r in range(4)], ends
assert all(e["status"] == "pass" and e["seconds"] >= 0 for e in ends), ends
ranks = {r["rank"] for r in rows}
assert ranks == {0, 1, 2, 3}, f"ranks in results.jsonl: {ranks}"
ar = [r for r in rows if r["test"] == "mpi.all_reduce" and r["metric"] == "busbw"]
assert {r["rank"] for r in ar} == {0, 1, 2, 3}
sizes = sorted({r["size_bytes"] for r in ar})
assert sizes[0] == 8 and sizes[-1] == 1048576 and len(sizes) == 18, sizes
assert all(r["value"] > 0 for r in ar)
assert all(r["status"] == "pass" for r in rows), [r for r in rows if r["status"] != "pass"][:2]
inv = [r for r in rows if r["test"] == "host.inventory" and r["metric"] == "inventory"]
assert len(inv) == 1 and inv[0]["extra"]["cpus"] >= 1
rep = json.load(open(out + "/report.json"))
assert rep["schema_version"] == 1
assert rep["verdict"] == "pass", rep["verdict"]
assert rep["findings"] == []
assert [r["rank"] for r in rep["ranks"]] == [0, 1, 2, 3]
assert all(r["state"] == "ok" and r["results"] > 0 for r in rep["ranks"])
assert rep["results"]["total"] == len(rows), (rep["results"]["total"], len(rows))
assert all(r["phase"] == "plan" for r in rep["rounds"])
assert len(rep["rounds"]) == 2 and all(not r["missing"] for r in rep["rounds"])
PY
for r in 0 1 2 3; do
  grep -qE "^  $r +" "$TMP/summary.txt" || bad "summary does not name rank $r"
done
pass "summary names every rank"
# Nothing left running.
sleep 0.5
pgrep -f "$WORKER" >/dev/null && bad "kiln-worker processes left behind" || pass "no workers left behind"
finish
