#!/usr/bin/env bash
# Bad input: one clear line, exit 2, nothing half-written.
source "$(dirname "$0")/lib.sh"
umask 077
echo "0123456789abcdef" > "$TMP/secret"

expect_exit 2 "--ranks 0" -- "$KILN" run --ranks 0 --out "$TMP/r0"
[ "$(echo "$ERR" | wc -l)" -eq 1 ] && echo "$ERR" | grep -q "ranks" && pass "--ranks 0 says so in one line" || bad "--ranks 0 message: $ERR"
[ -e "$TMP/r0" ] && bad "--ranks 0 created its output directory" || pass "--ranks 0 wrote nothing"

expect_exit 2 "malformed hostlist" -- "$KILN" run --nodelist 'gpu[01-' --out "$TMP/r1"
echo "$ERR" | grep -q "gpu\[01-" && [ "$(echo "$ERR" | wc -l)" -eq 1 ] && pass "hostlist error names the text" || bad "hostlist message: $ERR"
[ -e "$TMP/r1" ] && bad "bad hostlist created its output directory" || pass "bad hostlist wrote nothing"

expect_exit 2 "unwritable --out" -- "$KILN" run --ranks 1 --out /proc/kiln-cannot-write
echo "$ERR" | grep -q "/proc/kiln-cannot-write" && pass "unwritable --out names the path" || bad "--out message: $ERR"

expect_exit 2 "unknown option" -- "$KILN" run --frobnicate
expect_exit 2 "unknown command" -- "$KILN" explode
expect_exit 2 "bad --listen" -- "$KILN" run --listen 127.0.0.1:99999 --out "$TMP/r2"
expect_exit 2 "bad --params" -- "$KILN" run --params '[1' --out "$TMP/r3"
expect_exit 0 "--help" -- "$KILN" run --help

# Values that used to be accepted: a wrong parameter type (it killed the worker with exit 134),
# durations that are not finite or absurd, an unknown check. One line, exit 2, nothing written.
expect_exit 2 "a parameter of the wrong type" -- "$KILN" run --ranks 1 --out "$TMP/p1" --tests host.inventory \
  --params '{"host.inventory":{"deadline_s":"x"}}'
echo "$ERR" | grep -q "host.inventory: deadline_s: must be a number" && pass "names the check and the parameter" || bad "params message: $ERR"
[ -e "$TMP/p1" ] && bad "bad --params created its output directory" || pass "bad --params wrote nothing"
expect_exit 2 "an unknown parameter" -- "$KILN" run --ranks 1 --out "$TMP/p2" --tests mpi.all_reduce --params '{"mpi.all_reduce":{"max_byte":8}}'
expect_exit 2 "an unknown check" -- "$KILN" run --ranks 1 --out "$TMP/p3" --tests gpu.frobnicate
for v in nan inf 1e300 -1 0; do
  expect_exit 2 "--deadline $v" -- "$KILN" run --ranks 1 --out "$TMP/d" --deadline "$v"
done
expect_exit 2 "--connect-timeout inf" -- "$KILN" run --ranks 1 --out "$TMP/d" --connect-timeout inf
expect_exit 2 "--localize-test without a figure" -- "$KILN" run --ranks 1 --out "$TMP/d" --localize-test host.inventory
expect_exit 2 "worker --deadline nan" -- "$WORKER" --standalone --deadline nan
# The worker validates a round's parameters itself too: a bad value ends that check in ERROR.
out=$(mpirun -np 1 "$WORKER" --standalone --tests host.inventory --params '{"host.inventory":{"deadline_s":"x"}}' 2>/dev/null)
echo "$out" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
end = [r for r in rows if r["record"] == "end"]
assert len(end) == 1 and end[0]["status"] == "error" and "deadline_s" in end[0]["reason"], rows' \
  && pass "worker: a bad parameter ends the check in ERROR, the worker lives" || bad "worker bad parameter: $out"
# --params as one object for every test (no top-level name is a test key): applied, so a CPU count
# the node does not have fails the check; the same object under the test's key does too.
cpus=$(nproc)
for p in "{\"expected_cpus\":$((cpus + 1))}" "{\"host.inventory\":{\"expected_cpus\":$((cpus + 1))}}"; do
  out=$(mpirun -np 1 "$WORKER" --standalone --tests host.inventory --params "$p" 2>/dev/null)
  if echo "$out" | grep -q '"record": *"end".*"status": *"fail"\|"status": *"fail".*"record": *"end"'; then
    pass "worker --params $p reaches the check"
  else bad "worker --params $p was not applied: $out"; fi
done

# A coordinator that accepts the connection but never answers (its accept queue is full): the
# worker's connect and handshake are bounded by --connect-timeout and the handshake deadline.
python3 - "$TMP/port" <<'PY' &
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
held = [socket.create_connection(s.getsockname()) for _ in range(4)]  # fill the backlog
time.sleep(40)
PY
for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
start=$SECONDS
expect_exit 2 "worker against a coordinator that never answers" -- "$WORKER" --coordinator "127.0.0.1:$(cat "$TMP/port")" \
  --secret-file "$TMP/secret" --connect-timeout 2
[ $((SECONDS - start)) -le 20 ] && pass "worker gave up in $((SECONDS - start)) s" || bad "worker took $((SECONDS - start)) s"
kill %1 2>/dev/null

# A worker whose coordinator address is closed.
expect_exit 2 "worker with a closed coordinator port" -- "$WORKER" --coordinator 127.0.0.1:1 --secret-file "$TMP/secret" --connect-timeout 1
echo "$ERR" | grep -q "cannot reach the coordinator at 127.0.0.1:1" && pass "worker says it cannot reach the coordinator" || bad "worker message: $ERR"
expect_exit 2 "worker with a malformed address" -- "$WORKER" --coordinator nowhere --secret-file "$TMP/secret"
expect_exit 2 "worker with no secret file" -- "$WORKER" --coordinator 127.0.0.1:1 --secret-file "$TMP/none"
finish
