#!/usr/bin/env bash
# Two ranks per node on the SLURM testbed (--ranks-per-node 2): sbatch runs 2 tasks on each node,
# node checks (host.inventory) run once per node, from its local rank 0, and group checks
# (mpi.all_reduce) report from every rank, each on its own node.
source "$(dirname "$0")/slurm_lib.sh"
need_testbed 3
OUT="$TMP/run"
"$KILN" run --partition debug --nodes 3 --ranks-per-node 2 --out "$OUT" --tests host.inventory,mpi.all_reduce \
  --localize-by off --params '{"mpi.all_reduce":{"max_bytes":65536}}' > "$TMP/summary.txt" 2> "$TMP/stderr.txt"
rc=$?
if [ $rc -eq 0 ]; then pass "campaign exit 0"; else
  bad "campaign exit $rc"; cat "$TMP/summary.txt" "$TMP/stderr.txt" "$OUT"/slurm-*.out; fi
python3 - "$OUT" <<'PY' && pass "node checks once per node, group checks from all 6 ranks, 2 ranks per node" || bad "results"
import json, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(out + "/results.jsonl")]
res = [r for r in rows if r["record"] == "result"]
host_of = {}
for r in rows:
    host_of.setdefault(r["rank"], set()).add(r["host"])
assert sorted(host_of) == [0, 1, 2, 3, 4, 5], host_of
assert all(len(h) == 1 for h in host_of.values()), host_of
per_node = {}
for rank, hosts in host_of.items():
    per_node.setdefault(next(iter(hosts)), []).append(rank)
assert sorted(len(v) for v in per_node.values()) == [2, 2, 2], per_node
inv = [r for r in res if r["test"] == "host.inventory"]
inv_ranks = {r["rank"] for r in inv}
assert len({r["host"] for r in inv}) == 3, "host.inventory on every node"
assert len(inv_ranks) == 3 and all(min(per_node[r["host"]]) == r["rank"] for r in inv), (inv_ranks, per_node)
ar = {r["rank"] for r in res if r["test"] == "mpi.all_reduce" and r["metric"] == "busbw"}
assert ar == {0, 1, 2, 3, 4, 5}, ar
rep = json.load(open(out + "/report.json"))
assert rep["verdict"] == "pass", rep["findings"][:2]
print(f"ranks per node {per_node}; host.inventory from ranks {sorted(inv_ranks)}; {len(res)} results")
PY
no_workers_left
finish
