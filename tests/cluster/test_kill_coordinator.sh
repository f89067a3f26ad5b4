#!/usr/bin/env bash
# kill -9 of the coordinator during a SLURM campaign: every result it acknowledged is in
# results.jsonl, and kiln resume finishes the campaign with a new job (the old one is cancelled if
# it still runs): verdict pass, every record counted, no round twice, no worker left anywhere.
source "$(dirname "$0")/slurm_lib.sh"
source "${KILN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/store_lib.sh"
need_testbed 2
OUT="$TMP/run"
PLAN=$(long_plan 6)
KILN_LOG_LEVEL=debug "$KILN" run --partition debug --nodes 2 --out "$OUT" --localize-by off --tests "$PLAN" \
  --params "$LONG_PARAMS" > "$TMP/run.out" 2> "$TMP/run.err" &
pid=$!
if ! wait_for "$TMP/run.err" "round 3: mpi" 180; then
  bad "the campaign never reached round 3"; cat "$TMP/run.err"; kill $pid; wait $pid; finish
fi
sleep 0.5
kill -9 $pid
wait $pid 2>/dev/null
old_job=$(basename "$(ls "$OUT"/slurm-*.out | head -1)" .out); old_job=${old_job#slurm-}
acked=$(acked "$TMP/run.err")
lines=$(wc -l < "$OUT/results.jsonl")
echo "figures: $acked records acknowledged before the kill, $lines lines in results.jsonl after it (job $old_job $(squeue --noheader --states=all --jobs="$old_job" --format=%T))"
[ "$acked" -gt 0 ] && [ "$lines" -ge "$acked" ] && pass "all $acked acknowledged records are in the file" \
  || bad "acknowledged $acked, $lines lines"
lines_parse "$OUT/results.jsonl" && pass "every line parses" || bad "a torn or bad line"

start=$(date +%s.%N)
"$KILN" resume "$OUT" > "$TMP/resume.out" 2> "$TMP/resume.err"
rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
echo "figures: kiln resume took $secs s"
grep -E "earlier session|round [0-9]+ ended|connected \(" "$TMP/resume.err" | sed 's/^/  resume: /' | head -12
[ $rc -eq 0 ] && pass "kiln resume finished the campaign (exit 0)" \
  || { bad "kiln resume exit $rc"; cat "$TMP/resume.err" "$TMP/resume.out"; cat "$OUT"/slurm-*.out | tail -20; }
jobs=$(ls "$OUT"/slurm-*.out | wc -l)
[ "$jobs" -eq 2 ] && pass "resume ran a new job" || bad "$jobs job output files"
state=$(squeue --noheader --states=all --jobs="$old_job" --format=%T 2>/dev/null)
case "$state" in RUNNING|PENDING|COMPLETING) bad "the old job $old_job is still $state";; *) pass "the old job $old_job is $state";; esac
python3 - "$OUT" "$PLAN" <<'PY' && pass "report: the whole campaign, totals equal the file, no round twice" || bad "report content"
import json, sys
out, plan = sys.argv[1], sys.argv[2].split(",")
rep = json.load(open(out + "/report.json"))
rows = [json.loads(l) for l in open(out + "/results.jsonl") if '"record":"result"' in l]
assert rep["verdict"] == "pass", (rep["verdict"], rep.get("error"), rep["findings"][:3])
assert rep["launcher"] == "slurm" and rep["sessions"] == 2
assert rep["results"]["total"] == len(rows), (rep["results"]["total"], len(rows))
ids = [r["id"] for r in rep["rounds"]]
assert ids == sorted(set(ids)), ids
assert [r["tests"][0]["key"] for r in rep["rounds"] if r["finished"]] == plan
assert sorted(n["host"] for n in rep["nodes"]) == ["node1", "node2"], rep["nodes"]
PY
no_workers_left
finish
