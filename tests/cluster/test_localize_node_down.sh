#!/usr/bin/env bash
# `fault down` on a node during the campaign: the node is reported lost and the campaign finishes
# without it.
source "$(dirname "$0")/localize_lib.sh"
need_testbed 6
cleanup() {
  clear_faults
  # Bring the node back for whoever runs next.
  scontrol update nodename=node4 state=resume >/dev/null 2>&1 || true
}
at_exit cleanup
clear_faults
OUT="$TMP/down"
start=$SECONDS
run_localize "$OUT" &
pid=$!
# Wait for the localization rounds to start, then cut node4 off.
for _ in $(seq 600); do grep -q "localize" "$OUT.stderr" 2>/dev/null && break; sleep 0.1; done
"$TESTBED" fault down node4
wait $pid
RC=$?
echo "campaign: exit $RC in $((SECONDS - start)) s"
F=$(findings "$OUT")
echo "findings:"; echo "$F"
[ $RC -eq 1 ] && pass "the campaign finished with findings (exit 1)" || { bad "exit $RC, want 1"; show_run "$OUT"; }
echo "$F" | grep -qE "^(node\.lost node node4|rank\.lost rank 3)$" && pass "node4 reported lost" || { bad "node4 not reported lost"; show_run "$OUT"; }
other=$(echo "$F" | grep -vE "node4|rank 3$" || true)
[ -z "$other" ] && pass "no finding about another node" || bad "other findings: $other"
python3 - "$OUT" <<'PY' && pass "the other nodes finished the campaign" || bad "report after node loss"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
assert rep["verdict"] == "fail", rep["verdict"]
ok = [r for r in rep["ranks"] if r["state"] == "ok"]
assert len(ok) == len(rep["ranks"]) - 1, rep["ranks"]
assert rep["localization"]["ran"]
PY
finish
