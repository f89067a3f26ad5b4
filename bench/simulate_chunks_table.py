"""Table of bench/simulate_chunks.py's chunks.jsonl: chunks of a cell merged (recall weighted by\ntrials, precision from true positives and false findings), judged by simulate_models.judge."""
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simulate_models import CELLS, judge
from collections import defaultdict
ch = defaultdict(list); errs = defaultdict(int)
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("result"): ch[(r["label"], r["n"])].append(r["result"])
    else: errs[(r["label"], r["n"])] += r["trials"]
order = [c[0] for c in CELLS]; kinds = {c[0]: c[3] for c in CELLS}
print("| cell | N | P | R | false (trials) | unresolved | accounted | switch | rounds mean | max | bound | verdict |")
print("|" + "---|" * 12)
for (label, n) in sorted(ch, key=lambda k: (order.index(k[0]), k[1])):
    rs = ch[(label, n)]; t = sum(r["trials"] for r in rs)
    truth = lambda r: r["bad_nodes"] + r["bad_links"] + r["bad_rails"]
    tp = sum(r["recall"] * r["trials"] * truth(r) for r in rs)
    j = dict(rs[0]); j["trials"] = t
    for k in ("false_findings", "false_finding_trials", "unresolved", "accounted_trials", "switch_found_trials"):
        j[k] = sum(r[k] for r in rs)
    j["recall"] = sum(r["recall"] * r["trials"] for r in rs) / t
    j["precision"] = tp / (tp + j["false_findings"]) if tp + j["false_findings"] else 1.0
    j["rounds_mean"] = sum(r["rounds_mean"] * r["trials"] for r in rs) / t
    j["rounds_max"] = max(r["rounds_max"] for r in rs)
    notes, target = judge(kinds[label], j, n)
    miss = errs.get((label, n), 0)
    v = ("PASS" if not notes else "MISS: " + "; ".join(notes)) + (f" ({miss} trials not run)" if miss else "")
    print(f"| {label} | {n} | {j['precision']:.3f} | {j['recall']:.3f} | {j['false_findings']} ({j['false_finding_trials']}) | "
          f"{j['unresolved']} | {j['accounted_trials']}/{t} | {j['switch_found_trials']} | {j['rounds_mean']:.1f} | "
          f"{j['rounds_max']} | {j['rounds_bound']:.0f} | {v} |")
for k, v in errs.items():
    if k not in ch: print("not run:", k, v)
