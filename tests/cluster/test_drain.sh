#!/usr/bin/env bash
# Drain on a slowed node, against the testbed's real slurmctld: `kiln run --drain` without --yes
# only prints the scontrol line; `kiln drain RUN_DIR --yes` drains node3 with reason
# "kiln node.slow <run-id>" (scontrol show node); `kiln undrain RUN_DIR --yes` puts it back, and
# leaves alone a node an admin drained for a reason of their own; a healthy `kiln run --drain --yes`
# drains nothing.
source "$(dirname "$0")/localize_lib.sh"
need_testbed 6
cleanup() {
  clear_faults
  scontrol update NodeName=node3,node5 State=RESUME > /dev/null 2>&1
}
at_exit cleanup
clear_faults
node_line() { scontrol --oneliner show node "$1"; }
drained() { node_line "$1" | grep -q 'State=[A-Z+]*DRAIN'; }

"$TESTBED" fault slow node3 100mbit > /dev/null || { echo "SKIP: cannot shape node3"; exit 77; }
OUT="$TMP/slow"
run_localize "$OUT" --drain
F=$(findings "$OUT")
echo "findings:"; echo "$F"
RUN_ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$OUT/report.json")
[ $RC -eq 1 ] && echo "$F" | grep -qx "node.slow node node3" && pass "exit 1, node.slow node3" \
  || { bad "exit $RC, findings: $F"; show_run "$OUT"; finish; }
grep -qx "scontrol update NodeName=node3 State=DRAIN Reason=\"kiln node.slow $RUN_ID\"" "$OUT.summary" \
  && pass "--drain without --yes prints the scontrol line" || { bad "no scontrol line"; cat "$OUT.summary"; }
! drained node3 && [ ! -e "$OUT/drained.json" ] && pass "...and changes nothing" || bad "node3 drained without --yes"
clear_faults

"$KILN" drain "$OUT" --yes > "$TMP/drain.out" 2>&1; rc=$?
cat "$TMP/drain.out"
echo "slurm: $(node_line node3 | grep -o 'State=[^ ]*') $(node_line node3 | grep -o 'Reason=.*')"
[ $rc -eq 0 ] && drained node3 && node_line node3 | grep -q "Reason=kiln node.slow $RUN_ID" \
  && pass "kiln drain --yes: node3 drained with reason kiln node.slow $RUN_ID" || bad "drain (rc $rc)"
others=$(sinfo --noheader --format='%n %t' | awk '$1 != "node3" && $2 !~ /^idle$/')
[ -z "$others" ] && pass "no other node drained" || bad "other nodes not idle: $others"

# An admin drains node5 for a reason of their own: undrain resumes node3 and leaves node5 alone (a
# node kiln drained that an admin drained again for their own reason is left too: tests/unit/test_drain.cpp).
scontrol update NodeName=node5 State=DRAIN Reason="bad PSU"
"$KILN" undrain "$OUT" > "$TMP/undrain-dry.out" 2>&1
grep -qx "scontrol update NodeName=node3 State=RESUME" "$TMP/undrain-dry.out" && drained node3 \
  && pass "undrain without --yes prints the line and changes nothing" || { bad "undrain dry run"; cat "$TMP/undrain-dry.out"; }
"$KILN" undrain "$OUT" --yes > "$TMP/undrain.out" 2>&1; rc=$?
cat "$TMP/undrain.out"
[ $rc -eq 0 ] && ! drained node3 && drained node5 && node_line node5 | grep -q "Reason=bad PSU" \
  && pass "kiln undrain --yes: node3 back, node5 (an admin's drain) left as it was" || bad "undrain (rc $rc)"
scontrol update NodeName=node5 State=RESUME

OUT2="$TMP/healthy"
run_localize "$OUT2" --drain --yes
F=$(findings "$OUT2")
echo "healthy findings: ${F:-(none)}"
drained_now=$(sinfo --noheader --format='%n %t' | awk '$2 ~ /drain|drng|drained/')
if echo "$F" | grep -q '^node\.'; then
  bad "a node finding on the healthy testbed (the flat testbed's noise): $F"
else
  [ -z "$drained_now" ] && grep -q "nothing to drain" "$OUT2.summary" \
    && pass "healthy run with --drain --yes: exit $RC, nothing drained" || { bad "drained: $drained_now"; cat "$OUT2.summary"; }
fi
finish
