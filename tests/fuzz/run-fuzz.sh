#!/usr/bin/env bash
# One short libFuzzer run of one target, as a ctest test: tests/fuzz/run-fuzz.sh <target>.
# Runs fuzz_<target> from KILN_FUZZ_DIR (scripts/build-fuzz.sh builds it; `make test` does both)
# for KILN_FUZZ_SECONDS (default 20) over its seed corpus, with ASan, UBSan and a per-input
# timeout. New inputs go to a scratch directory, never into the source tree. A crash, a timeout, a
# sanitizer report or a failed expectation fails the test and leaves the input in
# KILN_FUZZ_DIR/artifacts/. Exit 77 (SKIP) with the reason when the fuzz build could not be made
# for want of clang's libFuzzer.
set -uo pipefail
target=${1:?usage: run-fuzz.sh <target>}
SRC=${KILN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FUZZ=${KILN_FUZZ_DIR:-$SRC/build-fuzz}
SECONDS_PER_TARGET=${KILN_FUZZ_SECONDS:-20}

state=$(cat "$FUZZ/status" 2>/dev/null || echo "missing")
case "$state" in
  ok) ;;
  skip:*) echo "SKIP: fuzz build not made: ${state#skip: }"; exit 77 ;;
  fail:*) echo "FAIL: ${state#fail: }"; exit 1 ;;
  *) echo "FAIL: no fuzz build in $FUZZ: run scripts/build-fuzz.sh $FUZZ first (make test does)"; exit 1 ;;
esac
bin="$FUZZ/bin/fuzz_$target"
[ -x "$bin" ] || { echo "FAIL: $bin is missing (scripts/build-fuzz.sh builds it)"; exit 1; }

scratch=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$scratch" "$log"' EXIT
mkdir -p "$FUZZ/artifacts"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$SRC/tests/fuzz/ubsan.supp"
dict=()
[ -f "$SRC/tests/fuzz/$target.dict" ] && dict=(-dict="$SRC/tests/fuzz/$target.dict")
# libFuzzer exits 77 on a crash by default, which ctest would read as SKIP: exit 2 and 3 instead.
"$bin" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -error_exitcode=2 -timeout_exitcode=3 \
  "${dict[@]}" -artifact_prefix="$FUZZ/artifacts/$target-" -print_final_stats=1 \
  "$scratch" "$SRC/tests/fuzz/corpus/$target" > "$log" 2>&1
rc=$?
runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$')
if [ $rc -ne 0 ]; then
  grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse|INITED)' "$log" | tail -60
  echo "FAIL: fuzz_$target exited $rc; the input is under $FUZZ/artifacts/ (rerun: $bin <file>)"
  exit 1
fi
echo "fuzz_$target: ${runs:-?} inputs in ${SECONDS_PER_TARGET} s, no crash, hang or sanitizer report"
