#!/usr/bin/env bash
# Bad input: one clear line, exit 2, nothing half-written.
source "$(dirname "$0")/lib.sh"

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

# A worker whose coordinator address is closed.
umask 077
echo "0123456789abcdef" > "$TMP/secret"
expect_exit 2 "worker with a closed coordinator port" -- "$WORKER" --coordinator 127.0.0.1:1 --secret-file "$TMP/secret" --connect-timeout 1
echo "$ERR" | grep -q "cannot reach the coordinator at 127.0.0.1:1" && pass "worker says it cannot reach the coordinator" || bad "worker message: $ERR"
expect_exit 2 "worker with a malformed address" -- "$WORKER" --coordinator nowhere --secret-file "$TMP/secret"
expect_exit 2 "worker with no secret file" -- "$WORKER" --coordinator 127.0.0.1:1 --secret-file "$TMP/none"
finish
