#!/usr/bin/env bash
# The fleet compared, with a real mechanism: node2's slurmd is pinned to one CPU (taskset, as a
# wrong cpuset or cgroup would do), so every job step on node2 runs with 1 usable CPU where the
# other nodes give 2. host.inventory reports what the job may use (its affinity), and the fleet
# comparison makes node2 the odd one out: a fleet.setting finding on node2 alone, exit 1.
source "$(dirname "$0")/slurm_lib.sh"
need_testbed 6
pid=$(pgrep -f "slurmd -D -N node2 " | head -1)
[ -n "$pid" ] || { echo "SKIP: no slurmd for node2"; exit 77; }
all=$(taskset -p "$pid" | sed 's/.*: //')
at_exit 'taskset -a -p "$all" "$pid" > /dev/null'
taskset -a -p 1 "$pid" > /dev/null
OUT="$TMP/run"
"$KILN" run --partition debug --nodes 6 --out "$OUT" --tests host.inventory --localize-by off \
  > "$TMP/summary.txt" 2> "$TMP/stderr.txt"
rc=$?
[ $rc -eq 1 ] && pass "campaign exit 1 (a finding)" || { bad "campaign exit $rc"; cat "$TMP/summary.txt" "$TMP/stderr.txt"; }
python3 - "$OUT" <<'PY' && pass "fleet.setting on node2 only: 1 usable CPU where 5 of 6 nodes have 2" || bad "findings"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
found = [(f["code"], f["entity"]["id"], f["summary"]) for f in rep["findings"]]
print(found)
assert [(c, e) for c, e, _ in found] == [("fleet.setting", "node2")], found
assert "cpus_usable on node2 is '1' where 5 of 6 nodes have '2'" == found[0][2], found[0][2]
PY
"$KILN" report "$OUT" > /dev/null 2>&1
python3 - "$OUT" <<'PY' && pass "kiln report rebuilds the same finding" || bad "kiln report"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
assert [(f["code"], f["entity"]["id"]) for f in rep["findings"]] == [("fleet.setting", "node2")]
PY
taskset -a -p "$all" "$pid" > /dev/null
wait_idle  # the first job's steps on node2 ran on one CPU and may still be completing
OUT="$TMP/again"
"$KILN" run --partition debug --nodes 6 --out "$OUT" --tests host.inventory --localize-by off > "$TMP/summary2.txt" 2> "$TMP/stderr2.txt"
rc=$?
[ $rc -eq 0 ] && pass "with node2's CPUs back, no finding (exit 0)" || { bad "exit $rc after restoring node2"; cat "$TMP/summary2.txt" "$TMP/stderr2.txt"; }
no_workers_left
finish
