#!/usr/bin/env bash
# The uplink between the two leaves slowed (testbed --topology tree, `fault uplink leaf2 100mbit`:
# tbf on both ends of leaf2's uplink). Every node is slow with its partners in the other leaf and
# fast inside its own, so no node stands out; the fleet compares the links crossing between leaves
# with the links inside leaves (SLURM's topology, kept in campaign.json) and names the path between
# leaf1 and leaf2: one switch.slow, no node finding. With the fault cleared: no finding.
#
# The suite's testbed is flat (one bridge); this test brings it up again in two leaves and, at the
# end, flat again with as many nodes (the cluster tests run one at a time).
source "$(dirname "$0")/localize_lib.sh"
need_tree_testbed
"$TESTBED" fault uplink leaf2 100mbit > /dev/null || { bad "cannot shape leaf2's uplink"; finish; }
OUT="$TMP/uplink"
LOCALIZE_TESTS=host.inventory,net.pair_bw run_localize "$OUT"
F=$(findings "$OUT" | sort)
echo "findings:"; echo "$F"
[ $RC -eq 1 ] && pass "exit 1 (findings)" || { bad "exit $RC"; show_run "$OUT"; }
echo "$F" | grep -qx "switch.slow switch leaf1<->leaf2" && pass "switch.slow names the path between leaf1 and leaf2" \
  || { bad "no switch.slow for the uplink"; show_run "$OUT"; }
[ -z "$(echo "$F" | grep -v '^switch.slow')" ] && pass "no node or link finding" || bad "other findings"
python3 - "$OUT" <<'PY' && pass "evidence: crossing links far below links inside a leaf" || bad "evidence"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
f = [f for f in rep["findings"] if f["code"] == "switch.slow"][0]
print(f["summary"])
ev = f["evidence"][0]
assert ev["crossing_median"] < 0.5 * ev["inside_median"] and ev["crossing_links"] >= 4, ev
PY
LOCALIZE_TESTS=host.inventory,net.pair_bw no_finding_when_cleared
finish
