#!/usr/bin/env bash
# A node dies mid-campaign: every process of node2 (slurmd, the job step, its two ranks) is killed
# with -9 (`testbed fault crash`). Its ranks are reported lost and nothing else; the other four
# ranks are restarted in a new step of the same allocation and run the rest of the plan; every
# result acknowledged before the crash is in results.jsonl. node2 is the middle node, so node3's
# ranks are MPI ranks 2 and 3 in the new step: they must still be called 4 and 5 (each result's
# rank on the host the report gives it).
source "$(dirname "$0")/slurm_lib.sh"
source "${KILN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/store_lib.sh"
need_testbed 3
cleanup() { "$TESTBED" fault clear > /dev/null 2>&1; }
at_exit cleanup
start_kill_drill
acked_before=$(acked "$TMP/run.err")
"$TESTBED" fault crash node2 && pass "crashed node2 with $acked_before records acknowledged"
wait $pid
rc=$?
[ $rc -eq 1 ] && pass "campaign ended with findings (exit 1)" \
  || { bad "exit $rc, want 1"; grep -v "debug\]" "$TMP/run.err" | tail -30; cat "$TMP/run.out"; tail -20 "$OUT"/slurm-*.out; }
acked=$(acked "$TMP/run.err")
lines=$(wc -l < "$OUT/results.jsonl")
echo "figures: $acked_before records acknowledged before the crash, $acked by the end, $lines lines in results.jsonl"
[ "$acked_before" -gt 0 ] && [ "$lines" -ge "$acked" ] && [ "$acked" -ge "$acked_before" ] \
  && pass "every acknowledged record is in the file" || bad "acknowledged $acked_before/$acked, $lines lines"
lines_parse "$OUT/results.jsonl" && pass "every line parses" || bad "a torn or bad line"
python3 - "$OUT" <<'PY' && pass "node2's two ranks lost, nothing else; the other 4 ranks finished the plan" || bad "report content"
import json, sys
out = sys.argv[1]
rep = json.load(open(out + "/report.json"))
codes = sorted((f["code"], f["entity"]["id"]) for f in rep["findings"])
print("findings:", codes, "verdict:", rep["verdict"])
states = {r["rank"]: (r["host"], r["state"]) for r in rep["ranks"]}
dead = sorted(r for r, (h, s) in states.items() if h == "node2")
assert all(s == "lost" for r, (h, s) in states.items() if h == "node2"), states
assert all(s == "ok" for r, (h, s) in states.items() if h != "node2"), states
assert sorted(e for c, e in codes if c == "rank.lost") == [str(r) for r in dead], codes
assert all(c in ("rank.lost", "round.incomplete", "check.error") for c, e in codes), codes
plan = [r for r in rep["rounds"] if r["phase"] == "plan"]
assert len(plan) == 7 and all(r["finished"] for r in plan), [(r["id"], r["finished"]) for r in plan]
assert plan[-1]["done"] == sorted(set(range(6)) - set(dead)), plan[-1]
rows = [json.loads(l) for l in open(out + "/results.jsonl") if '"record":"result"' in l]
assert rep["results"]["total"] == len(rows), (rep["results"]["total"], len(rows))
wrong = [(r["rank"], r["host"]) for r in rows if states[r["rank"]][0] != r["host"]]
assert not wrong, ("results under another host's rank", wrong[:5])
assert any(r["round_id"] == plan[-1]["id"] and r["host"] == "node3" for r in rows), "node3 has no result in the last round"
PY
"$TESTBED" fault clear > /dev/null
wait_idle
[ "$(sinfo --noheader --partition=debug --format=%t | sort -u)" = "idle" ] && pass "node2 back in service after fault clear" \
  || { bad "nodes not idle after fault clear"; sinfo; }
no_workers_left
finish
