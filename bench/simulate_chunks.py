#!/usr/bin/env python3
"""The issue-13 grid of bench/simulate_models.py at full size, split into chunks of seeds and run on
every core: 100 seeds per fault cell and 1,000 healthy trials per noise up to N=256, fewer above
(see `plan`), N from 8 to 16,384 including sizes that are not powers of two. One JSON line per chunk
in OUT/chunks.jsonl (OUT from the environment); bench/simulate_chunks_table.py turns it into the
table. --sizes picks some of the plan's N (the whole grid takes more than one 10-minute call on 16
cores: N <= 1,024 in one, the rest in another).

  OUT=/tmp/grid python3 bench/simulate_chunks.py [SECONDS] [--runner "build/bin/kiln simulate"] [--jobs N]
      [--sizes 3000,4096,16384]
"""
import json, os, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
import argparse, shlex
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simulate_models import CELLS
ap = argparse.ArgumentParser()
ap.add_argument("seconds", nargs="?", type=float, default=560)
ap.add_argument("--runner", default="build/bin/kiln simulate")
ap.add_argument("--jobs", type=int, default=os.cpu_count())
ap.add_argument("--sizes", default="", help="comma-separated N from the plan (default: all)")
args = ap.parse_args()
K = shlex.split(args.runner) + ["--per-peer", "on"]
plan = {  # N: (seeds per fault cell, healthy trials per noise, seeds per job)
    8: (100, 1000, 1000), 12: (100, 1000, 1000), 48: (100, 1000, 250), 100: (100, 1000, 250),
    256: (100, 1000, 50), 1000: (20, 100, 10), 1024: (100, 200, 10), 3000: (10, 30, 1),
    4096: (20, 30, 1), 16384: (20, 50, 5)}
if args.sizes:
    plan = {n: plan[n] for n in map(int, args.sizes.split(","))}
jobs = []
for n, (seeds, healthy, per) in plan.items():
    for label, model, extra, kind in CELLS:
        total = healthy if kind == "healthy" else seeds
        for s in range(1, total + 1, per):
            jobs.append((label, model, extra, kind, n, s, min(per, total - s + 1)))
jobs.sort(key=lambda j: -j[4] * j[6])
deadline = time.time() + args.seconds
out = open(os.environ.get("OUT", ".") + "/chunks.jsonl", "w")
def run(j):
    label, model, extra, kind, n, s, t = j
    left = deadline - time.time()
    if left < 5:
        return dict(label=label, kind=kind, n=n, seed=s, trials=t, error="not started")
    t0 = time.time()
    try:
        p = subprocess.run(K + ["--model", model, "--nodes", str(n), "--seed", str(s), "--trials", str(t), "--json"] + extra,
                           capture_output=True, text=True, timeout=left)
        r = json.loads(p.stdout) if p.returncode == 0 else None
        return dict(label=label, kind=kind, n=n, seed=s, trials=t, secs=time.time() - t0, result=r,
                    error=None if r else (p.stdout + p.stderr)[-300:])
    except subprocess.TimeoutExpired:
        return dict(label=label, kind=kind, n=n, seed=s, trials=t, error="timeout")
with ThreadPoolExecutor(args.jobs) as ex:
    for rec in ex.map(run, jobs):
        if rec.get("result"): rec["result"].pop("detail", None)
        out.write(json.dumps(rec) + "\n"); out.flush()
print(len(jobs), "jobs")
