#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz, docs/fuzzing.md) for KILN_FUZZ_RUNS executions each
# (default 1,000,000), one after another at low priority, then prints a table: target, executions,
# exec/s, crashes, corpus size.
#
#   bench/fuzz_all.sh [target...]      default: every tests/fuzz/fuzz_*.cpp
#
# Environment: KILN_FUZZ_DIR (default build-fuzz; scripts/build-fuzz.sh builds it first),
# KILN_FUZZ_RUNS, KILN_FUZZ_BENCH_OUT (default runs/fuzz-bench): the grown corpora, crash inputs
# (artifacts/) and one log per target. Each target starts from its seed corpus (tests/fuzz/corpus)
# merged into the grown one of an earlier bench, if any. A crash does not end a target's run: its
# input is kept under artifacts/ and fuzzing resumes on the corpus grown so far (at most 20 times).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FUZZ=${KILN_FUZZ_DIR:-$ROOT/build-fuzz}
RUNS=${KILN_FUZZ_RUNS:-1000000}
OUT=${KILN_FUZZ_BENCH_OUT:-$ROOT/runs/fuzz-bench}
MAX_CRASHES=20

bash scripts/build-fuzz.sh "$FUZZ" || exit 1
grep -qx ok "$FUZZ/status" || { echo "fuzz_all: $(cat "$FUZZ/status")"; exit 77; }
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in tests/fuzz/fuzz_*.cpp; do t=${src##*/fuzz_}; targets+=("${t%.cpp}"); done
fi
mkdir -p "$OUT/artifacts" "$OUT/logs"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$ROOT/tests/fuzz/ubsan.supp"

# Executions in one libFuzzer log: its final stats, or (after a crash) the last status line.
executed() {
  local n
  n=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$1" | grep -o '[0-9]*$' | tail -1)
  [ -n "$n" ] || n=$(grep -o '^#[0-9]*' "$1" | tr -d '#' | tail -1)
  echo "${n:-0}"
}

rows=()
for t in "${targets[@]}"; do
  bin="$FUZZ/bin/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz_all: no $bin" >&2; exit 1; }
  corpus="$OUT/corpus/$t"
  mkdir -p "$corpus"
  cp -n "tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  done_runs=0 crashes=0 part=0
  start=$(date +%s.%N)
  while [ "$done_runs" -lt "$RUNS" ] && [ "$crashes" -lt "$MAX_CRASHES" ]; do
    part=$((part + 1))
    log="$OUT/logs/$t.$part.log"
    nice -n 10 "$bin" -runs=$((RUNS - done_runs)) -timeout=10 -rss_limit_mb=2048 -error_exitcode=2 \
      -timeout_exitcode=3 "${dict[@]}" -artifact_prefix="$OUT/artifacts/$t-" -print_final_stats=1 \
      "$corpus" > "$log" 2>&1
    rc=$?
    n=$(executed "$log")
    done_runs=$((done_runs + n))
    if [ $rc -ne 0 ]; then
      crashes=$((crashes + 1))
      echo "fuzz_all: fuzz_$t: crash $crashes (exit $rc) after $done_runs executions; see $log" >&2
      [ "$n" -gt 0 ] || break  # it crashes on the corpus itself: resuming would only repeat it
    fi
  done
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  files=$(find "$corpus" -type f | wc -l)
  kib=$(du -sk --apparent-size "$corpus" | cut -f1)
  rows+=("$(printf '| %-8s | %10d | %7.0f | %7d | %5d files, %5d KiB | %6.0f s |' "$t" "$done_runs" \
    "$(echo "$done_runs / $secs" | bc -l)" "$crashes" "$files" "$kib" "$secs")")
  echo "fuzz_all: fuzz_$t: $done_runs executions, $crashes crashes, in $(printf %.0f "$secs") s" >&2
done

echo
echo "| target   | executions |  exec/s | crashes | corpus                   |   time   |"
echo "|----------|-----------:|--------:|--------:|--------------------------|---------:|"
printf '%s\n' "${rows[@]}"
echo
echo "(corpora, crash inputs and logs: $OUT)"
