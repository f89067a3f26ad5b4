#!/usr/bin/env python3
"""One line summarising the node telemetry of one check in a results.jsonl (docs/telemetry.md).

usage: telemetry_summary.py results.jsonl [TEST]

Counts the samples taken during TEST (default: every check) and their rate, and prints the host's
median CPU, each GPU's median power, the hottest reading and the check's summary record, if any.
Exits 1 when there is no telemetry at all.
"""
import json
import statistics
import sys

path = sys.argv[1]
test = sys.argv[2] if len(sys.argv) > 2 else None
samples, summaries = [], []
try:
    with open(path) as f:
        for line in f:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            # A reading is a result of the running check with metric "telemetry" (value: seconds
            # into the check, figures in extra); the check's summary has metric "telemetry_summary".
            if d.get("metric") not in ("telemetry", "telemetry_summary") or (test and d.get("test") != test):
                continue
            x = d.get("extra") or {}
            row = {"t_s": d.get("value", 0.0), "ts": d.get("ts", 0.0), "node": x.get("node") or {}, "gpus": x.get("gpus") or []}
            (summaries if d["metric"] == "telemetry_summary" else samples).append(row)
except OSError as e:
    print(f"telemetry: no results ({e})")
    sys.exit(1)
if not samples:
    print(f"telemetry: no samples for {test or 'any check'} in {path}")
    sys.exit(1)

span = max(s["ts"] for s in samples) - min(s["ts"] for s in samples)
rate = (len(samples) - 1) / span if span > 0 else 0.0
cpu = [s["node"]["cpu_pct"] for s in samples if "cpu_pct" in s["node"]]
ngpu = max(len(s["gpus"]) for s in samples)
power = []
for g in range(ngpu):
    vals = [s["gpus"][g]["power_w"] for s in samples if g < len(s["gpus"]) and "power_w" in s["gpus"][g]]
    power.append(statistics.median(vals) if vals else None)
temps = [g["temp_c"] for s in samples for g in s["gpus"] if "temp_c" in g]
fields = sorted({k for s in samples for g in s["gpus"] for k in g})
parts = [f"telemetry {test or ''}: {len(samples)} samples over {span:.0f} s ({rate:.2f} Hz)",
         f"{len(summaries)} summar{'y' if len(summaries) == 1 else 'ies'}"]
if cpu:
    parts.append(f"host cpu median {statistics.median(cpu):.1f} %")
if any(p is not None for p in power):
    known = [p for p in power if p is not None]
    parts.append("power median W per GPU [" + ", ".join("-" if p is None else f"{p:.0f}" for p in power) +
                 f"] (median {statistics.median(known):.0f} W)")
if temps:
    parts.append(f"max temp {max(temps):.0f} C")
parts.append(f"GPU fields: {','.join(fields) if fields else 'none (no NVML)'}")
print("; ".join(parts))
