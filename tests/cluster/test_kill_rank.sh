#!/usr/bin/env bash
# kill -9 of one rank during a SLURM campaign (3 nodes, 2 ranks each). Under srun --mpi=pmix one
# task's death makes SLURM abort the whole step, so the campaign is cut short; what matters is that
# the report names the rank that died first (from srun's task-end line), and only it: verdict fail,
# exit 1, one rank.lost. Every result acknowledged before the kill is in results.jsonl, every line
# parses, the report's totals equal the file, and kiln report rebuilds the same findings.
source "$(dirname "$0")/slurm_lib.sh"
source "${KILN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/store_lib.sh"
need_testbed 3
start_kill_drill
# node2's second task: its rank from the task's environment.
victim="" rank=""
for p in $(ip netns pids kiln-node2); do
  grep -qa kiln-worker "/proc/$p/cmdline" 2>/dev/null || continue
  r=$(tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | sed -n 's/^SLURM_PROCID=//p')
  [ -n "$r" ] && { [ -z "$rank" ] || [ "$r" -gt "$rank" ]; } && { victim=$p; rank=$r; }
done
[ -n "$victim" ] || { bad "no kiln-worker task found on node2"; kill $pid; wait $pid; finish; }
acked_before=$(acked "$TMP/run.err")
kill -9 "$victim" && pass "killed rank $rank on node2 (pid $victim) with $acked_before records acknowledged"
wait $pid
rc=$?
[ $rc -eq 1 ] && pass "campaign ended with findings (exit 1)" \
  || { bad "exit $rc, want 1"; cat "$TMP/run.err" "$TMP/run.out"; tail -20 "$OUT"/slurm-*.out; }
acked=$(acked "$TMP/run.err")
lines=$(wc -l < "$OUT/results.jsonl")
echo "figures: $acked_before records acknowledged before the kill, $acked by the end, $lines lines in results.jsonl"
[ "$acked_before" -gt 0 ] && [ "$lines" -ge "$acked" ] && [ "$acked" -ge "$acked_before" ] \
  && pass "every acknowledged record is in the file" || bad "acknowledged $acked_before/$acked, $lines lines"
lines_parse "$OUT/results.jsonl" && pass "every line parses" || bad "a torn or bad line"
python3 - "$OUT" "$rank" <<'PY' && pass "one finding: rank.lost for rank $rank, which ended first; verdict fail" || bad "report content"
import json, sys
out, rank = sys.argv[1], int(sys.argv[2])
rep = json.load(open(out + "/report.json"))
codes = sorted((f["code"], f["entity"]["id"]) for f in rep["findings"])
print("findings:", codes, "verdict:", rep["verdict"])
print("error:", rep["error"])
assert codes == [("rank.lost", str(rank))], codes
f = rep["findings"][0]
assert "ended first (Killed)" in f["summary"] and f["evidence"][0]["host"] == "node2", f
assert rep["verdict"] == "fail" and "ended first" in rep["error"], (rep["verdict"], rep["error"])
rows = [json.loads(l) for l in open(out + "/results.jsonl") if '"record":"result"' in l]
assert rep["results"]["total"] == len(rows), (rep["results"]["total"], len(rows))
PY
cp "$OUT/report.json" "$TMP/live.json"
"$KILN" report "$OUT" > /dev/null 2>&1
python3 - "$TMP/live.json" "$OUT/report.json" <<'PY' && pass "kiln report rebuilds the same verdict and finding" || bad "rebuilt report differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda r: (r["verdict"], sorted((f["code"], f["entity"]["id"], f["summary"]) for f in r["findings"]))
assert key(a) == key(b), (key(a), key(b))
PY
no_workers_left
finish
