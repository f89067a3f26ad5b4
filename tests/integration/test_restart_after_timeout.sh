#!/usr/bin/env bash
# A group collective that overruns its deadline, on this host: the workers are restarted (mpirun
# again) and the later rounds run on all 4 ranks (the drill is in restart_lib.sh).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/store_lib.sh"
source "$(dirname "$0")/restart_lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
restart_drill --launcher local --ranks 4
sleep 0.5
pgrep -f "$WORKER" >/dev/null && bad "kiln-worker processes left behind" || pass "no workers left behind"
finish
