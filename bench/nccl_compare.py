#!/usr/bin/env python3
"""Side-by-side table of kiln's nccl.* sweep and nccl-tests' *_perf, from their JSON output.

kiln: JSON lines from `kiln-worker --standalone` (metric "busbw", extra.placement, extra.time_us).
nccl-tests: the file written by `-J FILE.json` (a "results" list of lines with out_of_place/in_place).
Several runs of each may be given; per size the best of each side is kept (highest busbw, lowest
time), so both sides are treated alike. The comparison uses the out-of-place column, as nccl-tests'
own summary lines do.

Targets (issue 6): busbw ratio >= 0.98 at every size from 1 MiB up; at small sizes (<= 64 KiB)
kiln's time within 2 us of the reference.
"""
import argparse
import json
import sys

MIB = 1 << 20
SMALL = 64 << 10


def load_kiln(paths, placement):
    best = {}
    for p in paths:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if r.get("metric") != "busbw" or r.get("extra", {}).get("placement") != placement:
                    continue
                size = int(r["size_bytes"])
                t = float(r["extra"]["time_us"])
                bw = float(r["value"])
                old = best.get(size)
                best[size] = (max(bw, old[0]), min(t, old[1])) if old else (bw, t)
    return best


def find_results(node):
    if isinstance(node, dict):
        if isinstance(node.get("results"), list):
            return node["results"]
        for v in node.values():
            found = find_results(v)
            if found is not None:
                return found
    elif isinstance(node, list):
        for v in node:
            found = find_results(v)
            if found is not None:
                return found
    return None


def load_ref(paths, placement):
    key = "out_of_place" if placement == "out" else "in_place"
    best = {}
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        for line in find_results(doc) or []:
            body = line.get(key)
            if not body:
                continue
            size = int(line["size"])
            if size == 0:
                continue
            bw = float(body["bus_bw"])
            t = float(body.get("time", body.get("cpu_time", 0.0)))
            old = best.get(size)
            best[size] = (max(bw, old[0]), min(t, old[1])) if old else (bw, t)
    return best


def human(n):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--kiln", nargs="+", required=True)
    ap.add_argument("--ref", nargs="+", required=True)
    ap.add_argument("--placement", default="out", choices=["out", "in"])
    ap.add_argument("--min-ratio", type=float, default=0.98)
    ap.add_argument("--max-extra-us", type=float, default=2.0)
    ap.add_argument("--summary", help="append one JSON line with the verdict to this file")
    a = ap.parse_args()

    ours = load_kiln(a.kiln, a.placement)
    ref = load_ref(a.ref, a.placement)
    sizes = sorted(set(ours) & set(ref))
    print(f"\n== {a.name} ({a.placement}-of-place, best of {len(a.kiln)} kiln / {len(a.ref)} nccl-tests runs)")
    print(f"{'size':>8} {'kiln us':>10} {'ref us':>10} {'d us':>7} {'kiln GB/s':>10} {'ref GB/s':>10} {'ratio':>6}  verdict")
    misses = []
    worst_ratio, worst_dt = None, None
    for s in sizes:
        (kb, kt), (rb, rt) = ours[s], ref[s]
        ratio = kb / rb if rb > 0 else float("nan")
        dt = kt - rt
        verdict = ""
        if s >= MIB:
            ok = ratio >= a.min_ratio
            verdict = "ok" if ok else f"MISS (<{a.min_ratio})"
            worst_ratio = ratio if worst_ratio is None else min(worst_ratio, ratio)
            if not ok:
                misses.append((s, "ratio", ratio))
        elif s <= SMALL:
            ok = dt <= a.max_extra_us
            verdict = "ok" if ok else f"MISS (+{dt:.1f} us)"
            worst_dt = dt if worst_dt is None else max(worst_dt, dt)
            if not ok:
                misses.append((s, "latency", dt))
        print(f"{human(s):>8} {kt:10.2f} {rt:10.2f} {dt:7.2f} {kb:10.2f} {rb:10.2f} {ratio:6.3f}  {verdict}")
    only = sorted(set(ours) ^ set(ref))
    if only:
        print(f"sizes measured by one side only: {', '.join(human(s) for s in only)}")
    print(f"worst ratio >= 1 MiB: {worst_ratio if worst_ratio is None else round(worst_ratio, 3)}; "
          f"worst extra time <= 64 KiB: {worst_dt if worst_dt is None else round(worst_dt, 2)} us; "
          f"{'ALL TARGETS MET' if not misses and sizes else 'TARGETS MISSED: ' + str(len(misses))}")
    if a.summary:
        with open(a.summary, "a") as f:
            f.write(json.dumps({"name": a.name, "sizes": len(sizes), "worst_ratio_1MiB_up": worst_ratio,
                                "worst_extra_us_small": worst_dt, "misses": misses}) + "\n")
    return 0 if sizes and not misses else 1


if __name__ == "__main__":
    sys.exit(main())
