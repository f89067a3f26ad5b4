#!/usr/bin/env bash
# The exports beside report.json, read by the tools they are for: a short local campaign and a
# recorded testbed run with findings (rebuilt by kiln report). report.junit.xml validates against
# tests/data/junit.xsd (xmllint) with one testcase per check and rank plus one per finding no check
# proves; kiln.prom passes promtool; report.influx is written into a real influxd and read back.
# Each tool that is missing SKIPs its part; exit 77 when no part could run.
source "$(dirname "$0")/lib.sh"
: "${KILN_SRC:?KILN_SRC must point at the source tree}"
RAN=0
skip() { echo "SKIP: $*"; }

LOCAL="$TMP/local"
"$KILN" run --launcher local --ranks 2 --out "$LOCAL" --quiet --tests host.inventory,mpi.all_reduce \
  --params '{"mpi.all_reduce":{"max_bytes":65536}}' --prom-textfile "$TMP/textfile/kiln.prom" \
  > "$TMP/summary.txt" 2> "$TMP/stderr.txt"
rc=$?
[ $rc -eq 0 ] && pass "local campaign exit 0" || { bad "local campaign exit $rc"; cat "$TMP/stderr.txt"; }
RECORDED="$TMP/recorded"
cp -r "$KILN_SRC/tests/data/runs/testbed-bad-link" "$RECORDED"
rm -f "$RECORDED"/report.junit.xml "$RECORDED"/kiln.prom "$RECORDED"/report.influx
"$KILN" report "$RECORDED" --quiet --influx "$TMP/elsewhere.influx" > /dev/null 2>&1
rc=$?
[ $rc -eq 1 ] && pass "kiln report on the recorded run exit 1 (it has findings)" || bad "kiln report exit $rc, want 1"
for d in "$LOCAL" "$RECORDED"; do
  for f in report.junit.xml kiln.prom report.influx; do [ -s "$d/$f" ] || bad "$d/$f not written"; done
done
# The campaign's --prom-textfile named a directory that does not exist: a warning, exit 0 all the same.
grep -q "could not write $TMP/textfile/kiln.prom" "$TMP/stderr.txt" && pass "an unwritable --prom-textfile is a warning" ||
  bad "no warning for the unwritable --prom-textfile"
mkdir -p "$TMP/textfile"
"$KILN" report "$LOCAL" --quiet --prom-textfile "$TMP/textfile/kiln.prom" > /dev/null 2>&1
cmp -s "$LOCAL/kiln.prom" "$TMP/textfile/kiln.prom" && pass "--prom-textfile copy equals kiln.prom" || bad "--prom-textfile copy differs"
cmp -s "$RECORDED/report.influx" "$TMP/elsewhere.influx" && pass "--influx copy equals report.influx" || bad "--influx copy differs"
[ -e "$TMP/textfile/kiln.prom.tmp" ] && bad "a kiln.prom.tmp was left in the textfile directory"

# JUnit: valid against our schema; testcases = the checks report.json counts + findings no check proves.
if command -v xmllint > /dev/null; then
  RAN=1
  for d in "$LOCAL" "$RECORDED"; do
    if xmllint --noout --schema "$KILN_SRC/tests/data/junit.xsd" "$d/report.junit.xml" 2> "$TMP/xmllint.txt"; then
      pass "$(basename "$d"): report.junit.xml validates against junit.xsd"
    else
      bad "$(basename "$d"): report.junit.xml does not validate: $(head -5 "$TMP/xmllint.txt")"
    fi
    python3 - "$d" <<'PY' && pass "$(basename "$d"): testcase counts match report.json" || bad "$(basename "$d"): testcase counts"
import json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
rep = json.load(open(d + "/report.json"))
checks = sum(n for by_status in rep["checks"].values() for n in by_status.values())
ends = [json.loads(l) for l in open(d + "/results.jsonl") if '"record":"end"' in l]
proved = lambda f: isinstance(f["evidence"], list) and any(
    isinstance(e, dict) and any(x["test"] == e.get("test") and x["rank"] == e.get("rank") for x in ends) for e in f["evidence"])
loose = [f for f in rep["findings"] if not proved(f)]
root = ET.parse(d + "/report.junit.xml").getroot()
suites = root.findall("testsuite")
cases = [c for s in suites for c in s.findall("testcase")]
in_checks = [c for c in cases if c.get("classname") != "kiln.localize"]
assert len(in_checks) == checks, (len(in_checks), checks)
assert len(cases) == checks + len(loose), (len(cases), checks, len(loose))
assert int(root.get("tests")) == len(cases)
for s in suites:
    cs = s.findall("testcase")
    assert int(s.get("tests")) == len(cs)
    for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        assert int(s.get(attr)) == sum(1 for c in cs if c.find(tag) is not None), (s.get("name"), attr)
failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
assert (failed > 0) == (rep["verdict"] != "pass"), (failed, rep["verdict"])
print(f"{d}: {len(cases)} testcases ({checks} check ends, {len(loose)} loose findings)")
PY
  done
else
  skip "xmllint not installed (Debian libxml2-utils): JUnit not validated"
fi

# Prometheus: promtool's exposition-format lint.
if command -v promtool > /dev/null; then
  RAN=1
  for d in "$LOCAL" "$RECORDED"; do
    if promtool check metrics < "$d/kiln.prom" > "$TMP/promtool.txt" 2>&1; then
      pass "$(basename "$d"): promtool check metrics passes"
    else
      bad "$(basename "$d"): promtool check metrics: $(head -5 "$TMP/promtool.txt")"
    fi
  done
  grep -q '^kiln_node_ok{node="node2"} 1$' "$RECORDED/kiln.prom" && pass "kiln_node_ok names a good node" ||
    bad "kiln_node_ok{node=\"node2\"} 1 missing"
  grep -q '^kiln_findings{.*code="link.slow".*} 1$' "$RECORDED/kiln.prom" && pass "kiln_findings holds link.slow" || bad "no link.slow in kiln_findings"
else
  skip "promtool not installed (Debian prometheus): kiln.prom not checked"
fi

source "$(dirname "$0")/influx_lib.sh"
if command -v influxd > /dev/null && command -v curl > /dev/null; then
  RAN=1
  check_influx "$LOCAL" "$RECORDED"
else
  skip "influxd or curl not installed (Debian influxdb, curl): report.influx not loaded"
fi

[ $RAN -eq 1 ] || { echo "SKIP: none of xmllint, promtool, influxd is installed"; exit 77; }
finish
