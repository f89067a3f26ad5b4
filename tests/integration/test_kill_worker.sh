#!/usr/bin/env bash
# kill -9 of one worker rank mid-campaign: the report says rank.lost for it, the other ranks run
# the rest of the plan, and every acknowledged result is in results.jsonl.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/store_lib.sh"
OUT="$TMP/run"
KILN_LOG_LEVEL=debug "$KILN" run --launcher local --ranks 3 --out "$OUT" --localize-by off --deadline 10 \
  --tests "$(long_plan 6)" --params "$LONG_PARAMS" > "$TMP/run.out" 2> "$TMP/run.err" &
pid=$!
if ! wait_for "$TMP/run.err" "round 4: mpi" 120; then
  bad "the campaign never reached round 4"; cat "$TMP/run.err"; kill $pid; finish
fi
# The worker ranks are mpirun's children; take local rank 2 (not the node agent, local rank 0, whose
# death takes its node's ranks with it) and read its rank from its environment.
victim=$(local_worker $pid 2)
[ -n "$victim" ] || { bad "no worker with local rank 2"; kill $pid; finish; }
rank=$(tr '\0' '\n' < "/proc/$victim/environ" | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
acked_before=$(acked "$TMP/run.err")
kill -9 "$victim" && pass "killed rank $rank (pid $victim) with $acked_before records acknowledged"
wait $pid
rc=$?
[ $rc -eq 1 ] && pass "campaign ended with findings (exit 1)" || { bad "exit $rc, want 1"; cat "$TMP/run.err" "$TMP/run.out"; tail -20 "$OUT/workers.log"; }
acked=$(acked "$TMP/run.err")
lines=$(wc -l < "$OUT/results.jsonl")
echo "figures: $acked records acknowledged, $lines lines in results.jsonl"
[ "$acked" -gt 0 ] && [ "$lines" -ge "$acked" ] && pass "every acknowledged record is in the file" || bad "acknowledged $acked, $lines lines"
lines_parse "$OUT/results.jsonl" && pass "every line parses" || bad "a torn or bad line"
one_rank_lost "$OUT" "$rank" 3 && pass "rank.lost for rank $rank; the others finished the plan" || bad "report content"
python3 - "$OUT" <<'PY' && pass "the report's totals equal the file" || bad "report totals"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
rows = [l for l in open(sys.argv[1] + "/results.jsonl") if '"record":"result"' in l]
assert rep["results"]["total"] == len(rows), (rep["results"]["total"], len(rows))
PY
# The journal holds the same fates: a report rebuilt from the run directory says the same.
rebuilt_report_same "$OUT" 1 ranks results verdict
sleep 0.5
pgrep -f "$WORKER" >/dev/null && bad "kiln-worker processes left behind" || pass "no workers left behind"
finish
