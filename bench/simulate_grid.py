#!/usr/bin/env python3
"""Run the localization grid of issue 4 through `kiln simulate` and print the table.

Grid: N in {64, 256, 1024, 4096, 16384} x (bad nodes, bad links) in {(1,0), (4,0), (0,1), (0,2), (2,1)}
x noise in {0.03, 0.10}, 100 seeds each. Targets: precision and recall 1.0 at 3% noise and >= 0.99
at 10%; bad nodes localized within log2(N)+4 rounds; one bad link within 2*log2(N)+6 rounds.
Rounds are judged on the worst seed's total rounds (until the planner is done, certification and
votes included), which is stricter than the round by which the faults were localized.

Uses `kiln simulate` when the CLI has it, else kiln_simulate_driver from the build directory.
Runs one cell at a time (one core). Only the Python standard library.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_runner(explicit):
    if explicit:
        return explicit.split()
    candidates = []
    for build in ("build-analysis", "build"):
        candidates.append([os.path.join(ROOT, build, "bin", "kiln"), "simulate"])
        candidates.append([os.path.join(ROOT, build, "bin", "kiln_simulate_driver")])
    if shutil.which("kiln"):
        candidates.insert(0, ["kiln", "simulate"])
    for cmd in candidates:
        if not os.path.exists(cmd[0]) and not shutil.which(cmd[0]):
            continue
        probe = subprocess.run(cmd + ["--nodes", "8", "--bad-nodes", "1", "--bad-links", "0",
                                      "--noise", "0.03", "--seed", "1", "--trials", "2", "--json"],
                               capture_output=True, text=True)
        if probe.returncode == 0:
            try:
                json.loads(probe.stdout)
                return cmd
            except ValueError:
                pass
    sys.exit("no simulator found: build kiln_simulate_driver (see docs/localization.md)")


def run_cell(cmd, n, k, l, noise, trials, seed):
    out = subprocess.run(cmd + ["--nodes", str(n), "--bad-nodes", str(k), "--bad-links", str(l),
                                "--noise", str(noise), "--seed", str(seed), "--trials", str(trials),
                                "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="64,256,1024,4096,16384")
    ap.add_argument("--faults", default="1:0,4:0,0:1,0:2,2:1", help="bad_nodes:bad_links,...")
    ap.add_argument("--noise", default="0.03,0.10")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runner", help="simulator command, e.g. 'build/bin/kiln simulate'")
    ap.add_argument("--json-out", help="also write every cell's JSON here")
    args = ap.parse_args()

    cmd = find_runner(args.runner)
    nodes = [int(x) for x in args.nodes.split(",")]
    faults = [tuple(int(v) for v in f.split(":")) for f in args.faults.split(",")]
    noises = [float(x) for x in args.noise.split(",")]

    print(f"# runner: {' '.join(cmd)}; {args.trials} seeds per cell from seed {args.seed}")
    header = ("| N | bad nodes | bad links | noise | precision | recall | rounds mean | rounds max "
              "| localized max | tests mean | modelled s | circle rounds | circle s | bound | targets |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    cells, misses = [], []
    t0 = time.time()
    for n in nodes:
        log2n = math.log2(n)
        for k, l in faults:
            for noise in noises:
                j = run_cell(cmd, n, k, l, noise, args.trials, args.seed)
                cells.append(j)
                need = 1.0 if noise <= 0.03 + 1e-9 else 0.99
                bound = log2n + 4 if l == 0 else 2 * log2n + 6
                notes = []
                if j["precision"] < need:
                    notes.append(f"precision {j['precision']:.4f} < {need}")
                if j["recall"] < need:
                    notes.append(f"recall {j['recall']:.4f} < {need}")
                if j["rounds_max"] > bound:
                    what = "rounds" if l <= 1 else "rounds (2 links; bound is for one)"
                    notes.append(f"{what} {j['rounds_max']} > {bound:g} by {j['rounds_max'] - bound:g}")
                verdict = "met" if not notes else "MISS: " + "; ".join(notes)
                if notes:
                    misses.append(f"N={n} ({k},{l}) noise {noise}: " + "; ".join(notes))
                print(f"| {n} | {k} | {l} | {noise:.2f} | {j['precision']:.4f} | {j['recall']:.4f} "
                      f"| {j['rounds_mean']:.1f} | {j['rounds_max']} | {j['localized_round_max']} "
                      f"| {j['tests_mean']:.0f} | {j['modelled_seconds_mean']:.0f} "
                      f"| {j['circle_rounds']} | {j['circle_modelled_seconds']:.0f} | {bound:g} | {verdict} |",
                      flush=True)
    print(f"\n# {len(cells)} cells in {time.time() - t0:.0f} s; "
          f"{'all targets met' if not misses else str(len(misses)) + ' cell(s) miss a target'}")
    for m in misses:
        print("#   " + m)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(cells, f, indent=1)
    return 0 if not misses else 1


if __name__ == "__main__":
    sys.exit(main())
