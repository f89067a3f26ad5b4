# Headless Chromium for the report.html tests (sourced after lib.sh): skips the test when there is
# no chromium; chrome ARGS... runs it with a bound on time and a private profile under $TMP.
CHROME=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROME" ] || { echo "SKIP: chromium not installed (scripts/install-deps.sh installs it)"; exit 77; }
chrome() { timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --user-data-dir="$TMP/chrome" "$@" 2>/dev/null; }
