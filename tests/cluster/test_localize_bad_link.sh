#!/usr/bin/env bash
# `fault link` between two nodes: a link finding for that pair and no node finding.
source "$(dirname "$0")/localize_lib.sh"
need_testbed 6
at_exit clear_faults
clear_faults
"$TESTBED" fault link node2 node5 100mbit || { echo "SKIP: cannot shape the node2-node5 link"; exit 77; }
OUT="$TMP/link"
start=$SECONDS
run_localize "$OUT"
echo "campaign: exit $RC in $((SECONDS - start)) s"
F=$(findings "$OUT")
echo "findings:"; echo "$F"
[ $RC -eq 1 ] && pass "exit 1 (findings)" || { bad "exit $RC, want 1"; show_run "$OUT"; }
[ "$F" = "link.slow link node2<->node5" ] && pass "the node2<->node5 link is the only finding" \
  || { bad "findings: $F"; show_run "$OUT"; }
echo "$F" | grep -q "^node\." && bad "a node finding for a link fault" || pass "no node finding"
clear_faults
finish
