#!/usr/bin/env bash
# `fault slow` on one node: that node is the only finding (node.slow), found by the planner's rounds.
source "$(dirname "$0")/localize_lib.sh"
need_testbed 6
at_exit clear_faults
clear_faults
"$TESTBED" fault slow node3 100mbit || { echo "SKIP: cannot shape node3"; exit 77; }
OUT="$TMP/slow"
start=$SECONDS
run_localize "$OUT"
echo "campaign: exit $RC in $((SECONDS - start)) s"
F=$(findings "$OUT")
echo "findings:"; echo "$F"
[ $RC -eq 1 ] && pass "exit 1 (findings)" || { bad "exit $RC, want 1"; show_run "$OUT"; }
[ "$F" = "node.slow node node3" ] && pass "node3 is the only finding" || { bad "findings: $F"; show_run "$OUT"; }
python3 - "$OUT" <<'PY' && pass "the story and evidence show the rounds" || bad "story/evidence"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
loc = rep["localization"]
assert loc["ran"] and loc["rounds"] >= 2 and len(loc["story"]["rounds"]) == loc["rounds"], loc
f = rep["findings"][0]
assert f["evidence"] and f["next_step"], f
PY
clear_faults
finish
