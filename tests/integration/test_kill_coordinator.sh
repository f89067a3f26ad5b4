#!/usr/bin/env bash
# kill -9 of the coordinator mid-campaign: every result it acknowledged is in results.jsonl, kiln
# report writes a report (verdict error, how to resume), and kiln resume finishes the campaign:
# the report counts every record in the file, runs the cut round again as a new round, and counts
# no round twice.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/store_lib.sh"
OUT="$TMP/run"
PLAN=$(long_plan 8)
KILN_LOG_LEVEL=debug "$KILN" run --launcher local --ranks 2 --out "$OUT" --localize-by off --tests "$PLAN" \
  --params "$LONG_PARAMS" > "$TMP/run.out" 2> "$TMP/run.err" &
pid=$!
if ! wait_for "$TMP/run.err" "round 4: mpi" 120; then
  bad "the campaign never reached round 4"; cat "$TMP/run.err"; kill $pid; finish
fi
sleep 0.2  # mid-round
kill -9 $pid
wait $pid 2>/dev/null
acked=$(acked "$TMP/run.err")
lines=$(wc -l < "$OUT/results.jsonl")
cp "$OUT/results.jsonl" "$TMP/after-kill.jsonl"
echo "figures: $acked records acknowledged before the kill, $lines lines in results.jsonl after it"
[ "$acked" -gt 0 ] && [ "$lines" -ge "$acked" ] && pass "all $acked acknowledged records are in the file ($lines lines)" \
  || bad "acknowledged $acked, file has $lines lines"
lines_parse "$OUT/results.jsonl" && pass "every line of results.jsonl parses" || bad "a torn or bad line"
[ -e "$OUT/report.json" ] && bad "a SIGKILLed coordinator wrote a report?" || pass "no report.json after the kill"

expect_exit 2 "kiln report on the killed run" -- "$KILN" report "$OUT"
python3 - "$OUT" <<'PY' && pass "kiln report: verdict error, says how far it got and how to resume" || bad "kiln report content"
import json, sys
out = sys.argv[1]
rep = json.load(open(out + "/report.json"))
assert rep["verdict"] == "error", rep["verdict"]
assert "kiln resume" in rep["error"] and "plan round(s) done" in rep["error"], rep["error"]
rows = [json.loads(l) for l in open(out + "/results.jsonl") if '"record":"result"' in l]
assert rep["results"]["total"] == len(rows), (rep["results"]["total"], len(rows))
assert any(not r["finished"] for r in rep["rounds"]), "the round the kill cut is not marked"
PY

start=$(date +%s.%N)
"$KILN" resume "$OUT" > "$TMP/resume.out" 2> "$TMP/resume.err"
rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
echo "figures: kiln resume took $secs s"
[ $rc -eq 0 ] && pass "kiln resume finished the campaign (exit 0)" || { bad "kiln resume exit $rc"; cat "$TMP/resume.err" "$TMP/resume.out"; }
cmp -n "$(stat -c %s "$TMP/after-kill.jsonl")" "$TMP/after-kill.jsonl" "$OUT/results.jsonl" \
  && pass "resume appended: the records from before the kill are untouched" || bad "results.jsonl was rewritten"
lines_parse "$OUT/results.jsonl" && pass "every line parses after resume" || bad "a bad line after resume"
python3 - "$OUT" "$PLAN" <<'PY' && pass "resumed report: whole campaign, totals equal the file, no round twice" || bad "resumed report content"
import json, sys
out, plan = sys.argv[1], sys.argv[2].split(",")
rep = json.load(open(out + "/report.json"))
lines = [json.loads(l) for l in open(out + "/results.jsonl")]
rows = [r for r in lines if r["record"] == "result"]
assert rep["verdict"] == "pass", (rep["verdict"], rep.get("error"), rep["findings"])
assert rep["sessions"] == 2
assert rep["results"]["total"] == len(rows), (rep["results"]["total"], len(rows))
ids = [r["id"] for r in rep["rounds"]]
assert ids == sorted(set(ids)), f"round ids repeat or go back: {ids}"
done = [r for r in rep["rounds"] if r["finished"]]
assert [r["tests"][0]["key"] for r in done] == plan, "each test of the plan once, in order"
cut = [r for r in rep["rounds"] if not r["finished"]]
assert len(cut) == 1 and cut[0]["results"] == rep["results"]["not_judged"], cut
assert sum(r["results"] for r in rep["rounds"]) == len(rows)
# Every record names a round of the report, and a finished round's records are all from one run of it.
assert {r["round_id"] for r in lines} <= set(ids)
assert all(r["state"] == "ok" for r in rep["ranks"]) and rep["findings"] == []
PY
sleep 0.5
pgrep -f "$WORKER" >/dev/null && bad "kiln-worker processes left behind" || pass "no workers left behind"
finish
