# Helpers for the localization system tests on the SLURM testbed (sourced).
source "$(dirname "${BASH_SOURCE[0]}")/slurm_lib.sh"

# The testbed's 6 namespaces share 2 cores, so unshaped healthy figures swing by 2-3x (a pair
# once read 2x slow under a concurrent build); a tbf fault is a 10x drop or more. The cut-off says
# "slow" only below 0.3 of the expected figure. (The drills shape a fabric instead: drill_lib.sh.)
LOCALIZE_ARGS=(--localize-by node --localize-bytes 4194304
               --localize-deadline 30 --slow-cutoff 0.3 --deadline 60)

# run_localize OUT [extra kiln args...]: one campaign on all testbed nodes; sets RC.
run_localize() {
  local out=$1
  shift
  "$KILN" run --partition debug --nodes "$TESTBED_NODES" --out "$out" --tests "${LOCALIZE_TESTS:-host.inventory}" \
    "${LOCALIZE_ARGS[@]}" "$@" \
    > "$out.summary" 2> "$out.stderr"
  RC=$?
  return $RC
}

# findings OUT: one "code entity-kind entity-id" line per finding.
findings() {
  python3 -c '
import json, sys
for f in json.load(open(sys.argv[1] + "/report.json"))["findings"]:
    print(f["code"], f["entity"]["kind"], f["entity"]["id"])' "$1"
}

show_run() {
  echo "--- summary"; cat "$1.summary"; echo "--- progress"; tail -40 "$1.stderr"
  show_evidence "$1"
  echo "--- shaping on the testbed's ports now"
  local dev
  for dev in /sys/class/net/*; do
    dev=$(basename "$dev")
    case $dev in lo | eth*) continue ;; esac
    tc qdisc show dev "$dev" 2>/dev/null | sed "s/^/$dev: /"
  done
}

# show_pairs OUT: every localization pair test's figure, one line per pair in test order, as the
# pair's time over the median pair test's (1.00 typical, 2.00 twice as slow), so that a wrong verdict
# in a CI log shows the readings it came from (a CI run once named two nodes and two links in the
# link-flap drill, and its log kept only the findings). Groups larger than a pair are left out.
show_pairs() {
  python3 - "$1/results.jsonl" <<'PY' || true
import collections, json, statistics, sys
groups = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("metric") != "busbw" or r.get("group_id", -1) < 0 or not r.get("value"):
        continue
    members = groups[(r["round_id"], r["group_id"])]
    members[r["host"]] = min(members.get(r["host"], float("inf")), r["value"])
pairs = collections.defaultdict(list)
for (rd, g), members in sorted(groups.items()):
    if len(members) == 2:
        pairs["<->".join(sorted(members))].append((rd, min(members.values())))
if not pairs:
    sys.exit(0)
typical = statistics.median(v for rows in pairs.values() for _, v in rows)
print("--- pair tests: time over the median pair test's, in round order")
for name in sorted(pairs):
    print("   %-16s %s" % (name, " ".join("%.2f@%d" % (typical / v, rd) for rd, v in pairs[name])))
PY
}

# show_evidence OUT: each finding's pair figures (slowness, z, tests), so that a wrong finding in a
# CI log says which readings made it.
show_evidence() {
  echo "--- evidence"
  python3 - "$1/report.json" <<'PY' || true
import json, sys
for f in json.load(open(sys.argv[1]))["findings"]:
    print(f["code"], f["entity"]["id"], "confidence", f.get("confidence"))
    evs = f.get("evidence", [])
    for ev in (evs if isinstance(evs, list) else [evs]):
        if not isinstance(ev, dict):
            continue
        print("   ", {k: v for k, v in ev.items() if k not in ("pairs", "readings")})
        for p in ev.get("pairs", []):
            print("      ", p)
PY
}

# no_finding_when_cleared: faults cleared, the same campaign (LOCALIZE_TESTS) exits 0 with no finding.
no_finding_when_cleared() {
  clear_faults
  local out="$TMP/clean" f
  run_localize "$out"
  f=$(findings "$out")
  [ $RC -eq 0 ] && [ -z "$f" ] && pass "fault cleared: exit 0, no finding" || { bad "clean run: exit $RC, findings: $f"; show_run "$out"; }
}

# reference_spec FILE VALUE SOURCE: a spec whose class "testbed" (partition debug) gives the
# localization its reference (docs/localization.md, "The reference from the spec"): an inter-node
# mpi.alltoall busbw at the localization's 4 MiB of VALUE GB/s.
reference_spec() {
  cat > "$1" <<TOML
[[class]]
name = "testbed"
partition = "debug"
optional = ["mpi.alltoall"]
[class.figures."mpi.alltoall".inter.busbw]
"4MiB" = { value = $2, tolerance = 0.10, source = "$3" }
TOML
}

clear_faults() { "$TESTBED" fault clear >/dev/null 2>&1 || true; }

# need_tree_testbed [FABRIC]: the testbed in two leaves (SLURM topology/tree, the topology.conf the
# testbed writes), brought up so if the suite's flat one is up; with FABRIC (e.g. 200mbit) every
# node's port is shaped to it, so healthy figures are set by the shaping and a fault can be mild.
# Adds an exit hook (at_exit) that clears the faults and the fabric and brings the flat testbed back
# (the cluster tests run one at a time).
need_tree_testbed() {
  local fabric=${1:-}
  need_testbed 6
  TREE_FLAT=""
  if [ "$(scontrol show topology 2>/dev/null | grep -c '^SwitchName=leaf')" -lt 2 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: the testbed is flat and only root can bring it up in two leaves"; exit 77; }
    TREE_FLAT=$TESTBED_NODES
    "$TESTBED" down > /dev/null 2>&1
    "$TESTBED" up "$TREE_FLAT" --topology tree > /dev/null 2>&1 || { bad "testbed up $TREE_FLAT --topology tree failed"; finish; }
    need_testbed 6
  fi
  at_exit restore_flat_testbed
  clear_faults
  if [ -n "$fabric" ]; then
    "$TESTBED" fabric "$fabric" > /dev/null || { bad "testbed fabric $fabric failed"; finish; }
  fi
}

restore_flat_testbed() {
  [ -n "${DRILL_BACKGROUND:-}" ] && kill "$DRILL_BACKGROUND" 2>/dev/null
  "$TESTBED" fabric off > /dev/null 2>&1 || true
  clear_faults
  if [ -n "$TREE_FLAT" ]; then "$TESTBED" down > /dev/null 2>&1; "$TESTBED" up "$TREE_FLAT" > /dev/null 2>&1; fi
}
