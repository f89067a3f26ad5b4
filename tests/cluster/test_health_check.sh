#!/usr/bin/env bash
# kiln-worker --health-check as slurmd's HealthCheckProgram on every testbed node (testbed health
# on): with every node healthy for two intervals nothing is drained; when node3's FAKE HCA port goes
# DOWN (testbed fault ib; no machine here has an HCA), node3 alone is drained within about two
# intervals with a "kiln-health ..." reason; when the port is back, --resume-on-pass resumes it.
# slurm.conf gets HealthCheckProgram back out on exit, whatever happened. Then `kiln run --profile
# health` on the 6 nodes: the short plan's six checks, verdict pass, in well under 2 minutes.
source "$(dirname "$0")/slurm_lib.sh"
need_testbed 6
INTERVAL=6
cleanup() {
  "$TESTBED" health off > /dev/null 2>&1
  "$TESTBED" fault ib node3 clear > /dev/null 2>&1
  scontrol update NodeName=node3 State=RESUME > /dev/null 2>&1
}
at_exit cleanup
reason_of() { scontrol --oneliner show node "$1" | grep -o 'Reason=.*' | sed 's/^Reason=//'; }
drained_nodes() { sinfo --noheader --partition=debug --Node --format='%N %t' | awk '$2 ~ /^dr/ {print $1}' | sort -u | xargs; }
# wait_until SECONDS CMD...: polls CMD every half second; prints how long it took.
wait_until() {
  local limit=$1 t0=$SECONDS
  shift
  while ! "$@"; do
    [ $((SECONDS - t0)) -ge "$limit" ] && return 1
    sleep 0.5
  done
  echo $((SECONDS - t0))
}
node3_drained() { [ "$(drained_nodes)" = node3 ]; }
none_drained() { [ -z "$(drained_nodes)" ]; }
health_ran_on_all() { [ "$(ls "$STATE"/nodes/node*/health.log 2>/dev/null | wc -l)" -ge 6 ]; }

STATE=$(dirname "$SLURM_CONF")
rm -f "$STATE"/nodes/node*/health.log
[ -z "$(drained_nodes)" ] || { echo "SKIP: nodes already drained: $(drained_nodes)"; exit 77; }
"$TESTBED" health on $INTERVAL "$WORKER" || { bad "testbed health on failed"; finish; }
grep -q "^HealthCheckProgram=" "$SLURM_CONF" && pass "HealthCheckProgram is in slurm.conf" || bad "slurm.conf has no HealthCheckProgram"

wait_until 30 health_ran_on_all > /dev/null && pass "the health check ran on all 6 nodes" \
  || bad "health.log on $(ls "$STATE"/nodes/node*/health.log 2>/dev/null | wc -l) of 6 nodes"
sleep $((2 * INTERVAL))
none_drained && pass "healthy for two intervals: no node drained" || bad "drained while healthy: $(drained_nodes)"
grep -h "^kiln-health: OK" "$STATE"/nodes/node1/health.log | tail -1

"$TESTBED" fault ib node3 down > /dev/null
if took=$(wait_until $((3 * INTERVAL + 5)) node3_drained); then
  pass "node3 alone drained ${took} s after its port went down (interval $INTERVAL s)"
else
  bad "node3 not drained in $((3 * INTERVAL + 5)) s; drained: '$(drained_nodes)'"; tail -5 "$STATE"/nodes/node3/health.log
fi
reason=$(reason_of node3)
echo "node3 reason: $reason"
case $reason in kiln-health\ ib.ports:*) pass "reason starts with kiln-health ib.ports" ;; *) bad "reason: $reason" ;; esac
grep -q "^kiln-health: drained node3" "$STATE"/nodes/node3/health.log && pass "the check printed what it did" \
  || bad "no 'drained node3' line in node3's health.log"

"$TESTBED" fault ib node3 clear > /dev/null
if took=$(wait_until $((3 * INTERVAL + 5)) none_drained); then
  pass "node3 resumed by --resume-on-pass ${took} s after its port came back"
else
  bad "node3 still drained $((3 * INTERVAL + 5)) s after the port came back"
fi

"$TESTBED" health off > /dev/null
grep -q "^HealthCheckProgram=" "$SLURM_CONF" && bad "slurm.conf still has HealthCheckProgram" || pass "slurm.conf restored"

wait_idle
OUT="$TMP/profile"
t0=$SECONDS
"$KILN" run --profile health --partition debug --nodes 6 --out "$OUT" > "$TMP/profile.out" 2> "$TMP/profile.err"
rc=$?
echo "kiln run --profile health on 6 nodes: $((SECONDS - t0)) s, exit $rc"
python3 - "$OUT" <<'PY' && [ $rc -eq 0 ] && pass "--profile health: the six checks of the short plan on 6 nodes, verdict pass" \
  || { bad "--profile health: exit $rc"; tail -5 "$TMP/profile.out" "$TMP/profile.err"; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
tests = sorted({r["test"] for r in rows if "test" in r})
hosts = sorted({r["host"] for r in rows if "host" in r})
verdict = json.load(open(sys.argv[1] + "/report.json"))["verdict"]
print("tests:", tests, "hosts:", len(hosts), "verdict:", verdict)
assert tests == ["gpu.burn", "gpu.health", "host.inventory", "ib.ports", "mpi.all_reduce", "nccl.all_reduce"]
assert len(hosts) == 6 and verdict == "pass"
PY
finish
