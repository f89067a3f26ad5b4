#!/usr/bin/env bash
# A clean testbed: no findings in 5 runs in a row.
source "$(dirname "$0")/localize_lib.sh"
need_testbed 6
at_exit clear_faults
clear_faults
for i in 1 2 3 4 5; do
  OUT="$TMP/clean$i"
  start=$SECONDS
  run_localize "$OUT"
  F=$(findings "$OUT")
  echo "run $i: exit $RC in $((SECONDS - start)) s, rounds $(json "$OUT/report.json" 'd["localization"]["rounds"]'), findings: ${F:-none}"
  if [ $RC -eq 0 ] && [ -z "$F" ]; then pass "clean run $i: no findings"; else bad "clean run $i: exit $RC, findings: $F"; show_run "$OUT"; fi
done
finish
