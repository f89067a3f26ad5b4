#!/usr/bin/env bash
# Builds the fuzz targets, then runs ctest; brings the SLURM testbed up around it when we are root
# and it is available.
set -uo pipefail
BUILD=${1:-build}
shift || true
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TESTBED="$ROOT/tests/cluster/testbed"
NODES=${KILN_TESTBED_NODES:-6}
# The libFuzzer targets, in their own build directory; the "fuzz:" tests run them (or SKIP with
# the reason when clang's libFuzzer is missing). KILN_NO_FUZZ=1 leaves them out.
bash "$ROOT/scripts/build-fuzz.sh" "$ROOT/$BUILD-fuzz" || echo "run-tests: warning: the fuzz build failed; the fuzz tests will FAIL" >&2
started=0
if [ "$(id -u)" -eq 0 ] && [ -x "$TESTBED" ] && [ -z "${KILN_NO_TESTBED:-}" ]; then
  echo "run-tests: bringing up the SLURM testbed ($NODES nodes)"
  "$TESTBED" down >/dev/null 2>&1 || true  # one left up by an earlier run would refuse to start
  if "$TESTBED" up "$NODES"; then
    started=1
  else
    echo "run-tests: warning: the testbed did not come up; cluster tests will SKIP" >&2
    "$TESTBED" down >/dev/null 2>&1 || true
  fi
fi
cleanup() { if [ $started -eq 1 ]; then "$TESTBED" down || true; fi; }
trap cleanup EXIT
cd "$ROOT/$BUILD" && ctest --output-on-failure --timeout 900 "$@"
