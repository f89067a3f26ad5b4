#!/usr/bin/env bash
# One connection per node: kiln run --launcher local --ranks 4 puts all 4 ranks on this host, so
# the coordinator sees one connection carrying 4 ranks (its "4 ranks on HOST connected" line), with
# the same results and verdict as --node-relay off (4 connections). Then kill -9 of a local rank
# that is not the node agent: the run does not hang, that rank is lost, the others finish the plan.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/store_lib.sh"
TESTS=host.inventory,mpi.all_reduce
PARAMS='{"mpi.all_reduce":{"max_bytes":1048576}}'
HOST=$(hostname)

run_campaign() {  # OUT RELAY: a short campaign, stderr in OUT.err
  KILN_NODE_RELAY=$2 "$KILN" run --launcher local --ranks 4 --out "$1" --tests "$TESTS" --params "$PARAMS" \
    > "$1.out" 2> "$1.err"
}

run_campaign "$TMP/on" on
rc_on=$?
run_campaign "$TMP/off" off
rc_off=$?
[ $rc_on -eq 0 ] && [ $rc_off -eq 0 ] && pass "both campaigns exit 0" || { bad "exit $rc_on (relay on), $rc_off (off)"; cat "$TMP/on.err" "$TMP/on/workers.log"; }
grep -q "kiln: 4 ranks on $HOST connected (4/4)" "$TMP/on.err" && ! grep -q "kiln: rank [0-9] on" "$TMP/on.err" \
  && pass "relay on: one connection carried the 4 ranks" || { bad "relay on: not one connection of 4"; grep connected "$TMP/on.err"; }
[ "$(grep -c "kiln: rank [0-3] on $HOST connected" "$TMP/off.err")" -eq 4 ] \
  && pass "relay off: one connection per rank" || { bad "relay off: not 4 connections"; grep connected "$TMP/off.err"; }
python3 - "$TMP/on" "$TMP/off" <<'PY' && pass "same checks, ranks, statuses and verdict with and without the relay" || bad "relay on and off differ"
import json, sys
def load(out):
    lines = [json.loads(l) for l in open(out + "/results.jsonl")]
    ends = sorted((e["test"], e["rank"], e["status"]) for e in lines if e["record"] == "end")
    rows = sorted((r["test"], r["rank"], r["metric"], r.get("size_bytes"), r["status"]) for r in lines if r["record"] == "result")
    rep = json.load(open(out + "/report.json"))
    return ends, rows, rep
on, off = load(sys.argv[1]), load(sys.argv[2])
assert on[0] == off[0], (on[0], off[0])
assert on[0] == [("host.inventory", 0, "pass")] + [("mpi.all_reduce", r, "pass") for r in range(4)], on[0]
assert on[1] == off[1], "the results differ"
assert {r[1] for r in on[1]} == {0, 1, 2, 3}
for k in ("verdict", "findings"):
    assert on[2][k] == off[2][k], (k, on[2][k], off[2][k])
assert on[2]["verdict"] == "pass" and on[2]["results"]["total"] == len(on[1])
assert all(r["state"] == "ok" for r in on[2]["ranks"])
# Each rank keeps its own place on the node (the hello's rank_info), as without the relay.
for out in sys.argv[1:3]:
    joined = [json.loads(l) for l in open(out + "/journal.jsonl") if '"joined"' in l]
    assert sorted((j["rank"], j["info"]["world_rank"], j["info"]["local_rank"]) for j in joined) == [(r, r, r) for r in range(4)], joined
PY

# kill -9 of a rank that is not the node agent (local rank 0), mid-campaign.
OUT="$TMP/kill"
KILN_LOG_LEVEL=debug timeout 280 "$KILN" run --launcher local --ranks 4 --out "$OUT" --localize-by off --deadline 10 \
  --tests "$(long_plan 6)" --params "$LONG_PARAMS" > "$TMP/kill.out" 2> "$TMP/kill.err" &
pid=$!
if ! wait_for "$TMP/kill.err" "round 4: mpi" 120; then
  bad "the campaign never reached round 4"; cat "$TMP/kill.err"; kill $pid; finish
fi
grep -q "kiln: 4 ranks on $HOST connected" "$TMP/kill.err" && pass "one connection for the 4 ranks" || bad "not one connection"
kiln_pid=$(pgrep -P $pid kiln | head -1)
mpirun_pid=$(pgrep -P "${kiln_pid:-$pid}" mpirun | head -1)
victim="" rank=""
for p in $(pgrep -P "$mpirun_pid" -f kiln-worker); do
  local_rank=$(tr '\0' '\n' < "/proc/$p/environ" | sed -n 's/^OMPI_COMM_WORLD_LOCAL_RANK=//p')
  if [ "$local_rank" = 2 ]; then victim=$p; rank=$(tr '\0' '\n' < "/proc/$p/environ" | sed -n 's/^OMPI_COMM_WORLD_RANK=//p'); fi
done
[ -n "$victim" ] || { bad "no worker with local rank 2 under mpirun $mpirun_pid"; kill $pid; finish; }
acked_before=$(acked "$TMP/kill.err")
kill -9 "$victim" && pass "killed rank $rank (local rank 2, pid $victim) with $acked_before records acknowledged"
wait $pid
rc=$?
[ $rc -ne 124 ] && pass "the campaign did not hang" || { bad "the campaign hung (killed by timeout)"; tail -20 "$TMP/kill.err" "$OUT/workers.log"; finish; }
[ $rc -eq 1 ] && pass "campaign ended with findings (exit 1)" || { bad "exit $rc, want 1"; tail -30 "$TMP/kill.err"; tail -20 "$OUT/workers.log"; }
acked=$(acked "$TMP/kill.err")
lines=$(wc -l < "$OUT/results.jsonl")
[ "$acked" -ge "$acked_before" ] && [ "$acked_before" -gt 0 ] && [ "$lines" -ge "$acked" ] \
  && pass "every acknowledged record is in the file ($acked acknowledged, $lines lines)" || bad "acknowledged $acked_before then $acked, $lines lines"
lines_parse "$OUT/results.jsonl" && pass "every line parses" || bad "a torn or bad line"
one_rank_lost "$OUT" "$rank" 4 && pass "rank.lost for rank $rank only; the other ranks of the node finished the plan" || bad "report content"
python3 -c 'import json, sys; sys.exit(not any(json.loads(l).get("rank") == int(sys.argv[2]) for l in open(sys.argv[1]) if "\"record\":\"result\"" in l))' \
  "$OUT/results.jsonl" "$rank" && pass "the killed rank's earlier results are on file" || bad "nothing of the killed rank's is on file"
grep -q "lost local rank $rank" "$OUT/workers.log" && pass "the node agent noticed and went on" || bad "the agent did not say it lost rank $rank"
sleep 0.5
pgrep -f "$WORKER" >/dev/null && bad "kiln-worker processes left behind" || pass "no workers left behind"
finish
