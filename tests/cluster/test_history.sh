#!/usr/bin/env bash
# The run history on the testbed: three campaigns recorded in one database, the third with node3
# slowed (tbf, 100 Mbit/s into it). Its net.pair_bw figure (the median of its links) falls far
# below the median of its two earlier runs: node.regressed names node3, and no other node. The
# testbed's healthy figures swing by 2-3x (localize_lib.sh), a tbf fault is a 10x drop or more,
# so the threshold here is 0.8. kiln history node3 lists the three runs.
source "$(dirname "$0")/localize_lib.sh"
need_testbed 6
trap 'clear_faults; [ -n "${KILN_KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
clear_faults
DB="$TMP/history.sqlite"
HIST=(--history "$DB" --regression-threshold 0.8)
for i in 1 2; do
  LOCALIZE_TESTS=host.inventory,net.pair_bw run_localize "$TMP/r$i" "${HIST[@]}"
  [ $RC -eq 0 ] && pass "healthy run $i: exit 0" || { bad "run $i: exit $RC"; show_run "$TMP/r$i"; }
done
"$TESTBED" fault slow node3 100mbit > /dev/null || { echo "SKIP: cannot shape node3"; exit 77; }
OUT="$TMP/r3"
LOCALIZE_TESTS=host.inventory,net.pair_bw run_localize "$OUT" "${HIST[@]}"
clear_faults
F=$(findings "$OUT" | sort)
echo "findings:"; echo "$F"
[ $RC -eq 1 ] && pass "slowed run: exit 1" || { bad "exit $RC"; show_run "$OUT"; }
[ "$(echo "$F" | grep '^node.regressed')" = "node.regressed node node3" ] \
  && pass "node.regressed names node3 and no other node" || { bad "regression findings"; show_run "$OUT"; }
python3 - "$OUT" <<'PY' && pass "the evidence: the figure now, the median before, 2 runs" || bad "node.regressed evidence"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
f = [f for f in rep["findings"] if f["code"] == "node.regressed"][0]
print(f["summary"])
# One entry per figure that fell (net.pair_bw, or the localization's mpi.alltoall rounds).
assert f["severity"] == "warning" and f["evidence"], f
for ev in f["evidence"]:
    assert ev["figure"].split()[0] in ("net.pair_bw", "mpi.alltoall") and ev["runs"] == 2, ev
    assert ev["now"] < 0.2 * ev["median_before"], ev
PY
"$KILN" history node3 --history "$DB" > "$TMP/h.out" 2>&1
[ "$(grep -c '^20' "$TMP/h.out")" -eq 3 ] && pass "kiln history node3: 3 runs" || { bad "history"; cat "$TMP/h.out"; }
grep -q "node.regressed" "$TMP/h.out" && pass "its history shows the finding" || bad "no node.regressed in history"
"$KILN" diff "$TMP/r1" "$OUT" | grep "^node3 .*net.pair_bw.*worse" > /dev/null \
  && pass "kiln diff marks node3's figure worse" || bad "diff"
finish
