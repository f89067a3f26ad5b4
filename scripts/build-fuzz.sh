#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) in their own build directory with clang, ASan and UBSan,
# and records the outcome in FUZZ_DIR/status for the ctest "fuzz:" tests (tests/fuzz/run-fuzz.sh):
#   ok              built
#   skip: <reason>  clang or its libFuzzer is not there (the fuzz tests then SKIP with the reason)
#   fail: <reason>  the build failed (the fuzz tests then FAIL)
# Usage: scripts/build-fuzz.sh [FUZZ_DIR]   (default build-fuzz; JOBS sets the parallelism)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FUZZ=${1:-build-fuzz}
case "$FUZZ" in /*) ;; *) FUZZ="$ROOT/$FUZZ" ;; esac
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
CXX_FUZZ=${KILN_FUZZ_CXX:-clang++}
CC_FUZZ=${KILN_FUZZ_CC:-clang}
mkdir -p "$FUZZ"
status() { echo "$1" > "$FUZZ/status"; echo "build-fuzz: $1"; }

if [ -n "${KILN_NO_FUZZ:-}" ]; then status "skip: KILN_NO_FUZZ is set"; exit 0; fi
if ! command -v "$CXX_FUZZ" >/dev/null; then
  status "skip: $CXX_FUZZ not found (Debian 12: apt-get install clang libclang-rt-14-dev)"; exit 0
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }\n' \
  > "$probe/probe.cpp"
if ! "$CXX_FUZZ" -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" 2> "$probe/err"; then
  status "skip: $CXX_FUZZ cannot link -fsanitize=fuzzer (Debian 12: apt-get install libclang-rt-14-dev): $(head -c 200 "$probe/err" | tr '\n' ' ')"
  exit 0
fi
log="$FUZZ/build.log"
if ! cmake -S "$ROOT" -B "$FUZZ" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CXX_FUZZ" \
       -DCMAKE_C_COMPILER="$CC_FUZZ" -DKILN_FUZZ=ON -DKILN_BUILD_WORKER=OFF > "$log" 2>&1; then
  tail -20 "$log" >&2
  status "fail: configuring the fuzz build failed (see $log)"; exit 1
fi
start=$(date +%s)
if ! cmake --build "$FUZZ" --target fuzz -j "$JOBS" >> "$log" 2>&1; then
  tail -30 "$log" >&2
  status "fail: the fuzz build failed (see $log)"; exit 1
fi
echo "build-fuzz: fuzz targets built in $(( $(date +%s) - start )) s"
status "ok"
