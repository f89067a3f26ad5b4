#!/usr/bin/env bash
# A sweep within a time budget: mpi.all_reduce with a deadline too short for its largest sizes
# measures the small ones, skips the large ones with a reason naming the estimate and the time
# left (both ranks skip the same sizes), and ends normally instead of in TIMEOUT.
source "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
# 8 B .. 256 MiB, about 8 GiB moved per size: the small sizes take milliseconds, the large ones
# seconds each on a small host, so a 4 s deadline cannot hold them all.
PARAMS='{"mpi.all_reduce":{"max_bytes":268435456,"bytes_per_size":8589934592,"max_iters":50,"budget_reserve_s":0.5}}'
mpirun -np 2 --oversubscribe "$WORKER" --standalone --tests mpi.all_reduce --deadline 4 --params "$PARAMS" \
  > "$TMP/budget.jsonl" 2> "$TMP/budget.err"
python3 - "$TMP/budget.jsonl" <<'PY' && pass "budget: small sizes pass, large ones skip alike on both ranks, no timeout" || { bad "budget sweep"; tail -20 "$TMP/budget.err"; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
res = [r for r in rows if r["record"] == "result" and r["test"] == "mpi.all_reduce"]
assert not [r for r in res if r["status"] in ("timeout", "error")], [r for r in res if r["status"] in ("timeout", "error")]
ends = [r for r in rows if r["record"] == "end"]
assert len(ends) == 2 and all(e["status"] not in ("timeout", "error") for e in ends), ends
per_rank = {}
for r in res:
    d = per_rank.setdefault(r["rank"], {"pass": set(), "skip": {}})
    if r["metric"] == "busbw" and r["status"] == "pass":
        assert r["value"] > 0, r
        d["pass"].add(r["size_bytes"])
    elif r["status"] == "skip":
        d["skip"][r["size_bytes"]] = r
assert sorted(per_rank) == [0, 1], per_rank.keys()
a, b = per_rank[0], per_rank[1]
assert a["pass"] == b["pass"] and set(a["skip"]) == set(b["skip"]), (a["pass"], b["pass"], sorted(a["skip"]), sorted(b["skip"]))
assert 8 in a["pass"] and 1024 in a["pass"], sorted(a["pass"])     # the small sizes were measured
assert 268435456 in a["skip"], sorted(a["skip"])                  # the largest was not
assert max(a["pass"]) < min(a["skip"]), (sorted(a["pass"]), sorted(a["skip"]))
first = a["skip"][min(a["skip"])]
assert "estimated" in first["reason"] and "left before the deadline" in first["reason"], first["reason"]
assert first["extra"]["estimate_s"] > 0 and first["extra"]["budget"] is True, first
print("measured up to", max(a["pass"]), "B; skipped from", min(a["skip"]), "B:", first["reason"])
PY
finish
