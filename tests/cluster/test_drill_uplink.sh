#!/usr/bin/env bash
# The uplink between the two leaves at half a port: a switch (uplink) finding, no node or link
# finding. Besides localization, the fleet compares the plan's pair figures that cross between the
# leaves (SLURM's topology, kept in campaign.json) with those inside a leaf: the finding carries
# that comparison too. One run; bench/testbed_drills.sh repeats it. The drill is in drill_lib.sh;
# its healthy twin (drill_healthy, the same pair checks with no fault) is test_drill_healthy.
source "$(dirname "$0")/drill_lib.sh"
need_tree_testbed "$DRILL_FABRIC"
drill_uplink 1
python3 - "$TMP/uplink-1" <<'PY' && pass "evidence: crossing pair figures below those inside a leaf" || bad "fleet evidence"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
f = [f for f in rep["findings"] if f["code"] == "switch.slow"][0]
print(f["summary"])
ev = [e for e in f["evidence"] if "crossing_median" in e]
assert ev, f["evidence"]
ev = ev[0]
print("fleet:", {k: ev[k] for k in ("crossing_median", "inside_median", "crossing_links") if k in ev})
assert ev["crossing_median"] < 0.75 * ev["inside_median"] and ev["crossing_links"] >= 4, ev
PY
finish
