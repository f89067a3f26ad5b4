#!/usr/bin/env bash
# Repeats the localization fault drills of tests/cluster/drill_lib.sh on the SLURM testbed and
# prints one line per run and a table: how many runs of each drill were right, and their rounds
# and seconds. Run as root with the testbed up (tests/cluster/testbed up 6); it is brought up in
# two leaves for the drills and flat again at the end.
#
#   KILN_BIN=build/bin bash bench/testbed_drills.sh [--repeat 3] [DRILL...]
# DRILL: link_2x link_flap late_fault uplink healthy two_faults (default: all; healthy runs 5x).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export KILN_BIN=${KILN_BIN:-$ROOT/build/bin}
KILN_BIN=$(cd "$KILN_BIN" && pwd)
repeat=3
drills=()
while [ $# -gt 0 ]; do
  case $1 in
    --repeat) repeat=${2:?--repeat N}; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) drills+=("$1"); shift ;;
  esac
done
[ ${#drills[@]} -gt 0 ] || drills=(link_2x link_flap late_fault uplink healthy two_faults)
source "$ROOT/tests/cluster/drill_lib.sh"
need_tree_testbed "$DRILL_FABRIC"
LINES="$TMP/lines"
: > "$LINES"
for d in "${drills[@]}"; do
  declare -F "drill_$d" > /dev/null || { echo "unknown drill '$d'" >&2; exit 2; }
  n=$repeat
  [ "$d" = healthy ] && [ "$repeat" -lt 5 ] && n=5
  for i in $(seq 1 "$n"); do
    wait_idle
    drill_"$d" "$i" > "$TMP/$d-$i.log" 2>&1
    grep '^DRILL ' "$TMP/$d-$i.log" | tee -a "$LINES"
  done
done
echo
echo "| drill | right | rounds (each run) | seconds (each run) |"
echo "|---|---|---|---|"
awk '{ name = $2; runs[name]++; if ($3 == "ok") ok[name]++
       split($5, r, "="); split($6, s, "="); rounds[name] = rounds[name] (rounds[name] ? ", " : "") r[2]
       secs[name] = secs[name] (secs[name] ? ", " : "") s[2]; if (!(name in order)) { order[name] = ++k; names[k] = name } }
     END { for (i = 1; i <= k; i++) { n = names[i]; printf "| %s | %d/%d | %s | %s |\n", n, ok[n] + 0, runs[n], rounds[n], secs[n] } }' "$LINES"
