#!/usr/bin/env bash
# A node slowed with the fault command (tbf, 100 Mbit/s into node3) is found two ways in one
# campaign: the fleet path (net.pair_bw in the plan meets every node with all 5 others; node3's
# median link stands out against the fleet: fleet.outlier) and localization (node.slow). Nothing
# else is named. Then, with the fault cleared, the same campaign has no finding.
source "$(dirname "$0")/localize_lib.sh"
need_testbed 6
at_exit clear_faults
clear_faults
"$TESTBED" fault slow node3 100mbit > /dev/null || { echo "SKIP: cannot shape node3"; exit 77; }
OUT="$TMP/slow"
WANT=$(printf 'fleet.outlier node node3\nnode.slow node node3')
LOCALIZE_TESTS=host.inventory,net.pair_bw run_localize "$OUT"
F=$(findings "$OUT" | sort)
# The testbed's 6 nodes share 2 cores with node3's throttled traffic: once in CI (2026-12-01) one
# healthy pair (node4<->node5) read slow for a whole run and was named link.slow. A wrong first run
# is shown with its evidence and the campaign runs once more; the test passes only if that rerun is
# exact (the suite's log keeps the first run's readings).
if [ "$F" != "$WANT" ]; then
  echo "first run named:"; echo "$F"; show_evidence "$OUT"
  echo "rerunning the campaign once"
  OUT="$TMP/slow-rerun"
  LOCALIZE_TESTS=host.inventory,net.pair_bw run_localize "$OUT"
  F=$(findings "$OUT" | sort)
fi
echo "findings:"; echo "$F"
[ $RC -eq 1 ] && pass "exit 1 (findings)" || { bad "exit $RC"; show_run "$OUT"; }
[ "$F" = "$WANT" ] \
  && pass "node3 named by the fleet path (fleet.outlier) and by localization (node.slow), nothing else" \
  || { bad "findings"; show_run "$OUT"; }
python3 - "$OUT" <<'PY' && pass "the fleet finding states node3's median link and the fleet's" || bad "fleet evidence"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
f = [f for f in rep["findings"] if f["code"] == "fleet.outlier"][0]
ev = f["evidence"][0]
print(f["summary"])
assert "median of its links" in f["summary"] and ev["check"] == "net.pair_bw"
assert ev["value"] < 0.75 * ev["fleet_median"], ev
PY
LOCALIZE_TESTS=host.inventory,net.pair_bw no_finding_when_cleared
finish
