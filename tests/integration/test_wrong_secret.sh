#!/usr/bin/env bash
# A worker with a wrong secret is rejected and logged; the campaign is unaffected.
source "$(dirname "$0")/lib.sh"
OUT="$TMP/run"
"$KILN" run --launcher none --ranks 2 --out "$OUT" --connect-timeout 60 \
  --params '{"mpi.all_reduce":{"max_bytes":65536}}' > "$TMP/summary.txt" 2> "$TMP/stderr.txt" &
KPID=$!
for _ in $(seq 100); do [ -s "$OUT/campaign.json" ] && break; sleep 0.1; done
EP=$(json "$OUT/campaign.json" 'd["coordinator"]')
umask 077
echo "not-the-secret" > "$TMP/wrong"
expect_exit 2 "worker with a wrong secret" -- "$WORKER" --coordinator "$EP" --secret-file "$TMP/wrong" --connect-timeout 5
echo "$ERR" | grep -q "auth_failed" && pass "the impostor is told why" || bad "impostor message: $ERR"
# Raw garbage at the port, too.
python3 - "$EP" <<'PY' && pass "garbage connection closed" || bad "garbage connection not closed"
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=5)
s.sendall(b"\xff" * 8 + b"GET / HTTP/1.0\r\n\r\n")
s.settimeout(5)
while True:
    b = s.recv(4096)
    if not b:
        break
PY
KILN_COORDINATOR="$EP" KILN_SECRET_FILE="$OUT/secret" mpirun -np 2 --oversubscribe "$WORKER" > "$TMP/workers.log" 2>&1
wait $KPID
rc=$?
[ $rc -eq 0 ] && pass "campaign still passes (exit 0)" || { bad "campaign exit $rc"; cat "$TMP/summary.txt" "$TMP/stderr.txt" "$TMP/workers.log"; }
[ "$(json "$OUT/report.json" 'd["rejected_connections"]')" -ge 2 ] && pass "rejections counted in the report" || bad "rejections not in report"
grep -q "authentication failed" "$TMP/stderr.txt" && pass "rejection logged" || bad "rejection not logged: $(cat "$TMP/stderr.txt")"
finish
