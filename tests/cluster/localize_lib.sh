# Helpers for the localization system tests on the SLURM testbed (sourced).
source "$(dirname "${BASH_SOURCE[0]}")/slurm_lib.sh"

# The testbed's 6 namespaces share 2 cores, so healthy figures swing by 2-3x; a tbf fault is a
# 10x drop. The cut-off says "slow" only below half of the expected figure.
LOCALIZE_ARGS=(--localize-by node --localize-bytes 4194304
               --localize-deadline 30 --slow-cutoff 0.5 --deadline 60)

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
}

# no_finding_when_cleared: faults cleared, the same campaign (LOCALIZE_TESTS) exits 0 with no finding.
no_finding_when_cleared() {
  clear_faults
  local out="$TMP/clean" f
  run_localize "$out"
  f=$(findings "$out")
  [ $RC -eq 0 ] && [ -z "$f" ] && pass "fault cleared: exit 0, no finding" || { bad "clean run: exit $RC, findings: $f"; show_run "$out"; }
}

clear_faults() { "$TESTBED" fault clear >/dev/null 2>&1 || true; }
