#!/usr/bin/env bash
# Node telemetry during every check (docs/telemetry.md): a short local campaign on 2 ranks of one
# node, one check of which (ib.ports over a 5 s window, on one healthy port of the fixture HCA
# tree) lasts long enough to count readings. The node's readings arrive at about 1 Hz from one rank only, with the host
# fields; every check has one summary; the run validates against the schemas (lib.sh's hook); and
# report.html, opened in headless Chromium, holds the node's plot with the checks marked.
source "$(dirname "$0")/lib.sh"
: "${KILN_SRC:?KILN_SRC must point at the source tree}"
source "$(dirname "$0")/html_lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }

RUN="$TMP/run"
mkdir -p "$TMP/ib" && cp -r "$KILN_SRC/tests/data/ib/before/mlx5_0" "$TMP/ib/"
KILN_IB_SYSFS_ROOT="$TMP/ib" "$KILN" run --launcher local --ranks 2 --out "$RUN" --quiet \
  --tests host.inventory,ib.ports,mpi.all_reduce \
  --params '{"ib.ports":{"window_s":5},"mpi.all_reduce":{"max_bytes":65536}}' > "$TMP/out.txt" 2>&1
rc=$?
[ $rc -eq 0 ] && pass "campaign exit 0" || { bad "campaign exit $rc"; tail -n 20 "$TMP/out.txt" "$RUN/workers.log"; }

python3 - "$RUN/results.jsonl" <<'PY' && pass "telemetry: ~1 Hz host readings from one rank, a summary per check" || bad "telemetry records"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
tel = [r for r in rows if r.get("metric") == "telemetry"]
summ = [r for r in rows if r.get("metric") == "telemetry_summary"]
ends = {r["test"] for r in rows if r["record"] == "end"}
assert tel, "no telemetry readings"
assert {r["rank"] for r in tel + summ} == {0}, "telemetry from a rank other than the node's lowest"
assert all(r["entity"] == {"kind": "node", "id": r["host"]} and r["status"] == "pass" for r in tel + summ)
# One summary per check, whatever the check.
assert sorted(r["test"] for r in summ) == sorted(ends), (sorted(r["test"] for r in summ), ends)
# The 5 s check: readings at about 1 Hz, every one with the host fields.
ib = sorted((r for r in tel if r["test"] == "ib.ports"), key=lambda r: r["ts"])
gaps = sorted(b["ts"] - a["ts"] for a, b in zip(ib, ib[1:]))
gap = gaps[len(gaps) // 2]  # the last reading is the check's tail, closer to the one before
print(f"ib.ports: {len(ib)} readings over {ib[-1]['ts'] - ib[0]['ts']:.2f} s, median gap {gap:.3f} s")
assert 5 <= len(ib) <= 7 and 0.9 <= gap <= 1.1, (len(ib), gaps)
for r in ib:  # rates in the first reading too: the sampler reads a baseline when the check begins
    n = r["extra"]["node"]
    assert 0 <= n["cpu_pct"] <= 100 and 0 < n["mem_used_pct"] < 100 and n["mem_used_gib"] > 0, n
    assert n["ib_rx_MB_s"] == 0 and n["ib_tx_MB_s"] == 0, n  # the fixture's counters stand still
s = next(r for r in summ if r["test"] == "ib.ports")
assert s["value"] == len(ib), (s["value"], len(ib))
lo, med, hi = s["extra"]["node"]["cpu_pct"]
assert lo <= med <= hi and s["extra"]["t_s"] >= 5, s
size = sum(len(json.dumps(r)) + 1 for r in tel) / len(tel)
print(f"mean telemetry line: {size:.0f} bytes (host only, no GPU)")
PY

chrome --dump-dom "file://$RUN/report.html" > "$TMP/dom.html"
python3 - "$TMP/dom.html" "$RUN/results.jsonl" <<'PY' && pass "report.html plots the node's telemetry, checks marked" || bad "report.html telemetry section"
import json, re, sys
dom = open(sys.argv[1]).read()
rows = [json.loads(l) for l in open(sys.argv[2])]
tests = {r["test"] for r in rows if r.get("metric") == "telemetry_summary"}
assert 'id="telemetry"' in dom, "no telemetry section"
nodes = re.findall(r'<div class="telemetry-node" data-host="[^"]*" data-samples="(\d+)" data-checks="(\d+)"', dom)
assert len(nodes) == 1, nodes
samples = sum(1 for r in rows if r.get("metric") == "telemetry")
assert int(nodes[0][0]) == samples and int(nodes[0][1]) == len(tests), (nodes, samples, tests)
assert len(re.findall(r'<svg[^>]*class="telemetry-plot"[^>]*data-plot="host"', dom)) == 1, "no host plot"
assert len(re.findall(r'<polyline data-series="(cpu_pct|mem_used_pct)"', dom)) == 2, "cpu and memory series"
plots = len(re.findall(r'<svg[^>]*class="telemetry-plot"', dom))
assert len(re.findall(r'<line class="check"', dom)) == len(tests) * plots, "one marker per check in each plot"
assert "NaN" not in dom and "<script" not in dom.lower()
PY
finish
