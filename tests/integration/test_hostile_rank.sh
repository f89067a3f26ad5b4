#!/usr/bin/env bash
# An authenticated but hostile rank (kiln-load --spoof, the real protocol) cannot report for another
# rank, host, node's GPU or a round that is not running: its connection is closed, nothing it
# claimed is stored, the report blames only it. And a worker whose coordinator goes silent leaves
# by itself, even in the middle of a check (its watchdog).
source "$(dirname "$0")/lib.sh"
LOAD="$KILN_BIN/kiln-load"
[ -x "$LOAD" ] || { echo "SKIP: kiln-load not built"; exit 77; }

for mode in entity host round rank; do
  out="$TMP/$mode"
  "$KILN" run --launcher none --ranks 2 --out "$out" --tests mpi.all_reduce --localize-by off --connect-timeout 20 \
    --quiet > "$out.summary" 2> "$out.stderr" &
  kpid=$!
  for _ in $(seq 100); do [ -s "$out/campaign.json" ] && break; sleep 0.1; done
  "$LOAD" --campaign "$out" --ranks 1 --first-rank 0 --results 5 --quiet > /dev/null 2>&1 &
  "$LOAD" --campaign "$out" --ranks 1 --first-rank 1 --results 5 --spoof "$mode" --quiet > "$out.hostile" 2>&1
  wait $kpid
  rc=$?
  python3 - "$out" "$mode" "$rc" <<'PY' && pass "spoofed $mode: refused, not stored, only the hostile rank is blamed" || bad "spoofed $mode"
import json, sys
out, mode, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [json.loads(l) for l in open(out + "/results.jsonl")]
rep = json.load(open(out + "/report.json"))
assert rc == 1, rc
assert not [r for r in rows if r.get("host") == "victim" or r.get("entity", {}).get("id", "").startswith("victim")], "stored"
assert not [r for r in rows if r["round_id"] >= 1000], "a record for a round that is not running was stored"
assert not [r for r in rows if r["rank"] == 1], "the hostile rank's records were stored"
assert all(r["rank"] == 0 and r["host"] == "fake0" for r in rows)
codes = {(f["code"], f["entity"]["id"]) for f in rep["findings"]}
assert ("rank.lost", "1") in codes, codes
assert not [c for c in codes if c[0] == "gpu.hang" or c[1] in ("0", "victim/gpu0")], codes
PY
  grep -q "closing rank 1's connection: it sent" "$out.stderr" && pass "the coordinator says why it closed rank 1" || bad "no log line: $(cat "$out.stderr")"
done

# Terminal escapes: an authenticated rank fills every text field it owns (reason, metric, problem
# code and text, its error message) with 100 KB of control sequences. What reaches the operator's
# terminal is escaped and cut: no ESC, BEL or C1 byte, and a bounded amount.
out="$TMP/text"
"$KILN" run --launcher none --ranks 2 --out "$out" --tests mpi.all_reduce --localize-by off --connect-timeout 20 \
  > "$out.summary" 2> "$out.stderr" &
kpid=$!
for _ in $(seq 100); do [ -s "$out/campaign.json" ] && break; sleep 0.1; done
"$LOAD" --campaign "$out" --ranks 1 --first-rank 0 --results 5 --quiet > /dev/null 2>&1 &
"$LOAD" --campaign "$out" --ranks 1 --first-rank 1 --results 5 --batch 1 --spoof text --quiet > "$out.hostile" 2>&1
schema_opt_out "$out"  # its problem codes are not catalog codes, on purpose: kept as sent
wait $kpid
rc=$?
[ "$rc" = 1 ] && pass "escape-filled results are findings (exit 1)" || bad "exit $rc"
python3 - "$out" <<'PY' && pass "no terminal control byte reaches the terminal, and the output is bounded" || bad "terminal output"
import sys
out = sys.argv[1]
sent = sum(len(l) for l in open(out + "/results.jsonl", "rb") if b'"rank":1' in l)
assert sent > 500000, sent  # the hostile text was really sent and stored (JSON-escaped)
for name in ("summary", "stderr"):
    data = open(out + "." + name, "rb").read()
    for bad in (b"\x1b", b"\x07", b"\xc2\x9b", b"\x9b"):
        assert bad not in data, (name, bad, data[:200])
    assert len(data) < 64 * 1024, (name, len(data))
    print(name, len(data), "bytes")
PY

# The watchdog: stop the coordinator (SIGSTOP) in the middle of a long check; the workers must leave
# within the watchdog bound (5 s here) plus a little, not run the check to its end.
out="$TMP/watchdog"
"$KILN" run --launcher local --ranks 2 --out "$out" --tests mpi.all_reduce --quiet \
  --params '{"mpi.all_reduce":{"min_bytes":1048576,"max_bytes":1048576,"bytes_per_size":"1T","max_iters":1000000}}' \
  --deadline 300 --mpirun-arg=-x --mpirun-arg=KILN_WATCHDOG=5 > "$out.summary" 2>&1 &
kpid=$!
for _ in $(seq 200); do grep -q '"mpi.all_reduce"' "$out/results.jsonl" 2>/dev/null && break; pgrep -f "kiln-worker" >/dev/null && [ -s "$out/results.jsonl" ] && break; sleep 0.1; done
sleep 1
pgrep -f "$WORKER" >/dev/null && pass "workers are running the check" || bad "no worker running"
kill -STOP $kpid
start=$SECONDS
while pgrep -f "$WORKER" >/dev/null && [ $((SECONDS - start)) -lt 30 ]; do sleep 0.5; done
left=$((SECONDS - start))
pgrep -f "$WORKER" >/dev/null && bad "workers still running ${left} s after the coordinator stopped" || pass "workers left ${left} s after the coordinator went silent"
[ "$left" -le 15 ] && pass "within the watchdog bound" || bad "took ${left} s"
kill -CONT $kpid; kill $kpid 2>/dev/null; wait $kpid 2>/dev/null
grep -q "silent for 5 s; leaving\|lost the coordinator" "$out/workers.log" && pass "the worker says why it left" || bad "workers.log: $(tail -5 "$out/workers.log")"
finish
