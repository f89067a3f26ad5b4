# Shared helpers for the SLURM system tests (sourced, not run: only test_*.sh are ctest tests).
# KILN_BIN points at build/bin, KILN_SRC at the source tree.
source "${KILN_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/tests/integration/lib.sh"
TESTBED="${KILN_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/tests/cluster/testbed"

# need_testbed N: exit 77 (SKIP) with the reason unless the testbed is up with N idle-able nodes.
need_testbed() {
  local want=${1:-1} conf total
  eval "$("$TESTBED" env 2>/dev/null)"
  conf=${SLURM_CONF:-}
  if [ -z "$conf" ] || [ ! -f "$conf" ]; then echo "SKIP: the SLURM testbed is not up (no slurm.conf; run tests/cluster/testbed up)"; exit 77; fi
  if ! command -v sinfo >/dev/null; then echo "SKIP: SLURM client commands are not installed"; exit 77; fi
  if ! total=$(timeout 20 sinfo --noheader --partition=debug --format=%D 2>/dev/null) || [ -z "$total" ]; then
    echo "SKIP: sinfo does not answer (is the testbed up? tests/cluster/testbed status)"; exit 77
  fi
  total=$(echo "$total" | awk '{s += $1} END {print s}')
  if [ "$total" -lt "$want" ]; then echo "SKIP: partition debug has $total nodes, this test needs $want"; exit 77; fi
  TESTBED_NODES=$total
  wait_idle
}

# wait_idle: up to a minute each for no job left running, pending or completing (an earlier job
# would make ours pend) and for every node idle (a node taken down and resumed may still be
# re-registering: a job started now pends or starts on a node still finding its feet).
wait_idle() {
  local i
  for i in $(seq 1 60); do
    [ -z "$(squeue --noheader --states=RUNNING,PENDING,COMPLETING 2>/dev/null)" ] && break
    sleep 1
  done
  for i in $(seq 1 60); do
    [ -z "$(sinfo --noheader --partition=debug --format=%t 2>/dev/null | grep -v '^idle$')" ] && break
    sleep 1
  done
}

# start_kill_drill: a 3-node, 2-ranks-per-node campaign of six 16 MiB all-reduce rounds in the
# background (pid in $pid, output in $TMP/run.out and run.err, run dir $OUT), once it reaches round
# 3. Needs store_lib.sh.
start_kill_drill() {
  OUT="$TMP/run"
  KILN_LOG_LEVEL=debug "$KILN" run --partition debug --nodes 3 --ranks-per-node 2 --out "$OUT" --localize-by off \
    --deadline 15 --tests "$(long_plan 6)" --params "$LONG_PARAMS" > "$TMP/run.out" 2> "$TMP/run.err" &
  pid=$!
  if ! wait_for "$TMP/run.err" "round 3: mpi" 180; then
    bad "the campaign never reached round 3"; cat "$TMP/run.err"; kill $pid; wait $pid; finish
  fi
}

# Fails the test if a kiln-worker runs anywhere: in the root namespace or any testbed node's namespace.
no_workers_left() {
  local i ns pid left="" deadline=$((SECONDS + 20))
  while :; do
    left=""
    for pid in $(pgrep -f "$WORKER"); do left+=" root-ns:$pid"; done
    for ns in $(ip netns list 2>/dev/null | awk '/^kiln-node/ {print $1}'); do
      for pid in $(ip netns pids "$ns" 2>/dev/null); do
        grep -qa kiln-worker "/proc/$pid/cmdline" 2>/dev/null && left+=" $ns:$pid"
      done
    done
    [ -z "$left" ] || [ $SECONDS -ge $deadline ] && break
    sleep 0.5
  done
  [ -z "$left" ] && pass "no kiln-worker left in the root namespace or any node namespace" \
    || bad "kiln-worker processes left behind:$left"
}
