#!/usr/bin/env bash
# report.html opened in headless Chromium: a short local campaign writes it next to report.json, and
# kiln report rebuilds it for a recorded testbed run with a slow link (pairs and a finding) and one
# with a hostile host name. The DOM must hold one row per finding and node, heatmap cells for the
# pairs, no element from the run's strings and no http(s) reference. A screenshot is kept.
source "$(dirname "$0")/lib.sh"
: "${KILN_SRC:?KILN_SRC must point at the source tree}"
source "$(dirname "$0")/html_lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
ARTIFACTS="${KILN_ARTIFACTS:-$KILN_BIN/../artifacts}"

# check_dom HTML DOM: rows against report.json, nothing fetched from the network.
check_dom() {
  local dir=$1 dom=$2
  python3 - "$dir/report.json" "$dom" <<'PY'
import json, re, sys
rep = json.load(open(sys.argv[1]))
dom = open(sys.argv[2]).read()
def n(pattern): return len(re.findall(pattern, dom))
assert n(r'<tr class="finding"') == len(rep["findings"]), (n(r'<tr class="finding"'), len(rep["findings"]))
assert n(r'<tr class="node ') == len(rep["nodes"]), (n(r'<tr class="node '), len(rep["nodes"]))
assert n(r'<div class="round ') == len(rep["rounds"]), "one timeline element per round"
for sec in ("findings", "nodes", "gpu-bars", "heatmap", "timeline", "checks"):
    assert f'id="{sec}"' in dom, "missing section " + sec
assert not re.search(r'''(src|href|action|srcset)\s*=\s*["']?\s*https?:''', dom, re.I), "an element references the network"
assert not re.search(r'''url\(\s*["']?https?:''', dom, re.I), "a style references the network"
assert "<script" not in dom.lower() and "<img" not in dom.lower(), "an element from the run's strings"
PY
}

# 1. A short local campaign: report.html written by the campaign itself.
LOCAL="$TMP/local"
"$KILN" run --launcher local --ranks 4 --out "$LOCAL" --quiet --tests host.inventory,mpi.all_reduce \
  --params '{"mpi.all_reduce":{"max_bytes":65536}}' > "$TMP/local.out" 2>&1
[ -s "$LOCAL/report.html" ] && pass "the campaign wrote report.html" || bad "no report.html: $(tail -5 "$TMP/local.out")"
chrome --dump-dom "file://$LOCAL/report.html" > "$TMP/local.dom"
check_dom "$LOCAL" "$TMP/local.dom" && pass "local run: DOM rows match report.json, self-contained" || bad "local run DOM"
grep -q 'no pair figures in this run' "$TMP/local.dom" && pass "no pairs: the heatmap says so" || bad "heatmap not empty"

# 2. The recorded slow-link run: pairs and a link.slow finding.
LINK="$TMP/bad-link"
cp -r "$KILN_SRC/tests/data/runs/testbed-bad-link" "$LINK"
"$KILN" report "$LINK" --quiet --html "$TMP/elsewhere.html" > /dev/null 2>&1
[ -s "$TMP/elsewhere.html" ] && [ ! -e "$LINK/report.html" ] && pass "kiln report --html writes only PATH" || bad "--html"
"$KILN" report "$LINK" --quiet > /dev/null 2>&1
chrome --dump-dom "file://$LINK/report.html" > "$TMP/link.dom"
check_dom "$LINK" "$TMP/link.dom" && pass "bad-link run: DOM rows match report.json" || bad "bad-link DOM"
cells=$(grep -o '<td class="cell"' "$TMP/link.dom" | wc -l)
[ "$cells" -gt 0 ] && pass "heatmap: $cells pair cells" || bad "no heatmap cells for a run with pairs"
grep -q 'class="finding" data-code="link.slow" data-entity="node2&lt;-&gt;node5"' "$TMP/link.dom" \
  && pass "the link.slow finding names node2<->node5" || bad "link.slow row"
mkdir -p "$ARTIFACTS"
chrome --screenshot="$ARTIFACTS/report-html.png" --window-size=1400,2000 "file://$LINK/report.html" > /dev/null
size=$(stat -c %s "$ARTIFACTS/report-html.png" 2>/dev/null || echo 0)
[ "$size" -gt 10000 ] && head -c 8 "$ARTIFACTS/report-html.png" | grep -q PNG \
  && pass "screenshot $ARTIFACTS/report-html.png ($size bytes)" || bad "screenshot: $size bytes"

# 3. A hostile host name in the records stays text.
EVIL="$TMP/evil"
cp -r "$KILN_SRC/tests/data/runs/testbed-bad-link" "$EVIL"
sed -i 's/"node6"/"node6<img src=x onerror=alert(1)><script>alert(2)<\/script>"/g' "$EVIL/results.jsonl" "$EVIL/report.json"
"$KILN" report "$EVIL" --quiet > /dev/null 2>&1
chrome --dump-dom "file://$EVIL/report.html" > "$TMP/evil.dom"
check_dom "$EVIL" "$TMP/evil.dom" && pass "hostile host name: no element injected" || bad "hostile host name"
grep -q 'node6&lt;img src=x' "$TMP/evil.dom" && pass "the hostile name shows as text" || bad "hostile name not shown"
finish
