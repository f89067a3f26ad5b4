#!/usr/bin/env bash
# net.pair_bw on a pair of ranks: bandwidth both ways and latency about the link between them;
# a group that is not a pair reports SKIP with the reason, never PASS.
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
mpirun -np 3 --oversubscribe "$WORKER" --standalone --tests net.pair_bw > "$TMP/three.jsonl" 2> "$TMP/three.err"
python3 - "$TMP/three.jsonl" <<'PY' && pass "three ranks: SKIP with the reason" || bad "three-rank group"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert rows and not [r for r in rows if r["status"] == "pass"], rows
assert all(r["status"] == "skip" and "groups of two" in r["reason"] for r in rows), rows
assert len([r for r in rows if r["record"] == "end"]) == 3
PY
finish
