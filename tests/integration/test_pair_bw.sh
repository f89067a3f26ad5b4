#!/usr/bin/env bash
# net.pair_bw on a pair of ranks: bandwidth both ways and latency about the link between them;
# a larger group measures disjoint pairings, each member with `partners` others.
source "$(dirname "$0")/lib.sh"
mpirun -np 2 --oversubscribe "$WORKER" --standalone --tests net.pair_bw > "$TMP/pair.jsonl" 2> "$TMP/pair.err"
python3 - "$TMP/pair.jsonl" <<'PY' && pass "pair: bw both ways and latency on the link" || { bad "pair results"; cat "$TMP/pair.err"; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
link = [r for r in rows if r["record"] == "result" and r["entity"]["kind"] == "link"]
assert {r["entity"]["id"] for r in link} == {link[0]["entity"]["id"]} and "<->" in link[0]["entity"]["id"]
bw = [r for r in link if r["metric"] == "bw"]
assert len(bw) == 2 and all(r["value"] > 0 for r in bw), bw
assert len({r["extra"]["direction"] for r in bw}) == 2
lat = [r for r in link if r["metric"] == "latency"]
assert len(lat) == 1 and lat[0]["value"] > 0
st = [r for r in rows if r["record"] == "end"]
assert len(st) == 2 and all(r["status"] == "pass" for r in st)
PY
# Larger groups: every member meets `partners` others in disjoint pairings (an odd group leaves
# one member out of each pairing); each pair is one link with bw both ways and a latency.
for np_ in 3 5 6; do
  mpirun -np $np_ --oversubscribe "$WORKER" --standalone --tests net.pair_bw \
    --params '{"net.pair_bw":{"bytes":65536,"pings":10}}' > "$TMP/g$np_.jsonl" 2> "$TMP/g$np_.err"
  python3 - "$TMP/g$np_.jsonl" $np_ <<'PY' && pass "$np_ ranks: every member has at least min(3, $np_-1) partners, each pair once" || { bad "$np_-rank group"; tail -5 "$TMP/g$np_.err"; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
g = int(sys.argv[2])
ends = [r for r in rows if r["record"] == "end"]
assert len(ends) == g and all(r["status"] == "pass" for r in ends), ends
links = {}
for r in rows:
    if r["record"] == "result" and r["metric"] == "bw":
        links.setdefault(r["entity"]["id"], []).append(r)
assert all(len(v) == 2 for v in links.values()), links   # each pair measured once, both ways
partners = {}
for lid in links:
    a, b = lid.split("<->")
    partners.setdefault(a, set()).add(b)
    partners.setdefault(b, set()).add(a)
want = min(3, g - 1)
assert len(partners) == g and all(len(p) >= want for p in partners.values()), partners
PY
done
finish
