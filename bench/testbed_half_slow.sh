#!/usr/bin/env bash
# Half of a testbed slowed at once: NODES nodes (default 12) on a 200 Mbit/s fabric, the ports of
# half of them (SLOW, default 2,4,5,8,9,11) at 100 Mbit/s, localized by node with a spec whose
# inter-node mpi.alltoall busbw at 4 MiB is what a healthy pair reaches (the localization's
# reference, docs/localization.md "The reference from the spec"). Without it (--no-spec) only the
# all-to-alls' fast core (planner item 12) can tell the good half: 0-6 of 6 found, 7 of 17 runs
# right (2026-12-07), one of them with no core and no finding at all; since a core of 4 and one row
# against it for localize.unresolved, every slow node named in 3 of 3 runs (1 right: all six
# node.slow), and with the row core in 5 of 5 (1 right), with rows weighed at their own rate in 3
# of 3 (none right: 0, 5 and 2 of 6 node.slow, the rest unresolved; 7-14 rounds, 76-146 s); with a
# spec, 6 of 6 every run (9-12 rounds, 74-100 s). Each run prints one line; a run is right
# when every slow node is named node.slow and no localization finding names a healthy node.
# Brings the testbed up with NODES nodes and takes it down at the end. Run as root; KILN_KEEP_TMP=1
# keeps the run directories.
#
#   KILN_BIN=build/bin bash bench/testbed_half_slow.sh [--repeat 3] [--nodes 12] [--slow 2,4,5,8,9,11]
#                                                       [--no-spec]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export KILN_BIN=${KILN_BIN:-$ROOT/build/bin}
KILN_BIN=$(cd "$KILN_BIN" && pwd)
repeat=3 nodes=12 slow=2,4,5,8,9,11 spec=1
while [ $# -gt 0 ]; do
  case $1 in
    --repeat) repeat=${2:?--repeat N}; shift 2 ;;
    --nodes) nodes=${2:?--nodes N}; shift 2 ;;
    --slow) slow=${2:?--slow LIST}; shift 2 ;;
    --no-spec) spec=0; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
# TMP, at_exit, the schema check of every run directory and KILN_KEEP_TMP come with the library.
source "$ROOT/tests/cluster/localize_lib.sh"
at_exit '"$TESTBED" down > /dev/null 2>&1'
"$TESTBED" down > /dev/null 2>&1
"$TESTBED" up "$nodes" > "$TMP/up.log" 2>&1 || { cat "$TMP/up.log"; exit 1; }
eval "$("$TESTBED" env)"
"$TESTBED" fabric 200mbit > /dev/null
for k in ${slow//,/ }; do "$TESTBED" fault slow "node$k" 100mbit > /dev/null || exit 1; done
reference_spec "$TMP/ref.toml" 0.0128 "a healthy testbed pair at 200 Mbit/s"
spec_args=()
[ "$spec" -eq 1 ] && spec_args=(--spec "$TMP/ref.toml")
echo "$nodes nodes, slowed: node${slow//,/ node}; reference: $([ "$spec" -eq 1 ] && echo 0.0128 GB/s || echo none)"
right=0
for i in $(seq 1 "$repeat"); do
  out=$TMP/run$i
  start=$SECONDS
  "$KILN" run --partition debug --nodes "$nodes" --out "$out" --tests host.inventory --no-history \
    --localize-by node --localize-bytes 4194304 --localize-deadline 30 --deadline 60 "${spec_args[@]}" \
    > "$out.summary" 2> "$out.stderr"
  rc=$?
  line=$(python3 - "$out/report.json" "$slow" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
slow = {"node" + k for k in sys.argv[2].split(",")}
found, false, other = set(), [], []
for f in rep["findings"]:
    ent = f["entity"]["id"]
    names = {ent} | set(ent.split("<->"))
    if f["code"] == "node.slow" and ent in slow:
        found.add(ent)
    elif f["code"].startswith(("node.", "link.", "localize.", "switch.")) and names - slow:
        false.append(f["code"] + ":" + ent)
    else:
        other.append(f["code"] + ":" + ent)
ok = found == slow and not false
print("ok" if ok else "wrong", "rounds=%s" % rep.get("localization", {}).get("rounds", 0),
      "found=%d/%d" % (len(found), len(slow)), "false=%d" % len(false),
      "findings=" + (";".join(sorted(false + other + ["node.slow:" + n for n in found])) or "none"))
PY
)
  echo "HALF run $i: rc=$rc seconds=$((SECONDS - start)) $line"
  case $line in ok*) right=$((right + 1)) ;; esac
done
echo "right: $right of $repeat"
[ "$right" -eq "$repeat" ]
