# Shared helpers for the integration tests (sourced). KILN_BIN points at build/bin.
set -uo pipefail
: "${KILN_BIN:?KILN_BIN must point at build/bin}"
KILN="$KILN_BIN/kiln"
WORKER="$KILN_BIN/kiln-worker"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
TMP=$(mktemp -d /tmp/kiln-it.XXXXXX)
# When a test ends, every run directory it made under $TMP (report.json, results.jsonl) is checked
# against schemas/*.json (tests/validate_run.py): an invalid one fails the test (exit 1), a test
# that failed or skipped keeps its own exit code. A test that corrupts a run's files on purpose
# marks that directory with schema_opt_out. Tests add their own cleanup with at_exit, not trap.
VALIDATE_RUN="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/validate_run.py"
EXIT_HOOKS=()
at_exit() { EXIT_HOOKS+=("$1"); }
schema_opt_out() { local d; for d in "$@"; do mkdir -p "$d" && : > "$d/.kiln-no-schema"; done; }
# schema_gate RC: validates the run directories under $TMP; prints the test's final exit code.
schema_gate() {
  local rc=$1 out vrc
  out=$(python3 "$VALIDATE_RUN" --tree "$TMP" 2>&1)
  vrc=$?
  [ -n "$out" ] && echo "$out" >&2
  [ "$vrc" -eq 1 ] && [ "$rc" -eq 0 ] && { echo "FAIL: a run directory does not match schemas/*.json" >&2; rc=1; }
  echo "$rc"
}
on_exit() {
  local rc=$? h
  rc=$(schema_gate "$rc")
  for h in "${EXIT_HOOKS[@]}"; do eval "$h"; done
  [ -n "${KILN_KEEP_TMP:-}" ] || rm -rf "$TMP"
  exit "$rc"
}
trap on_exit EXIT
FAILS=0
pass() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
finish() { if [ "$FAILS" -eq 0 ]; then echo "all checks passed"; exit 0; else echo "$FAILS check(s) failed"; exit 1; fi; }
# expect_exit CODE DESCRIPTION -- command...: runs it, checks the exit code, keeps stderr in $ERR.
expect_exit() {
  local want=$1 what=$2
  shift 3
  ERR=$("$@" 2>&1 >/dev/null)
  local got=$?
  if [ "$got" -eq "$want" ]; then pass "$what (exit $got)"; else bad "$what: exit $got, want $want; stderr: $ERR"; fi
}
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
# kiln run records every run and compares it with the node's earlier runs: off in the tests (runs
# of one test differ in plan and load, not in hardware), except where a test names --history.
export KILN_HISTORY=off
