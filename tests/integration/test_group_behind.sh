#!/usr/bin/env bash
# A group check that overruns its deadline because one member is slow: that rank's worker is
# throttled from here with SIGSTOP/SIGCONT (stopped 0.9 s of every second, so its heartbeats still
# flow but it runs about ten times slower). The report names it in one group.behind finding, and
# the other ranks, alive and waiting for it, are neither lost nor timed out.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/store_lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
OUT="$TMP/run"
# One size with far more iterations than an 8 s deadline holds once a member is throttled.
PARAMS='{"mpi.all_reduce":{"min_bytes":1048576,"max_bytes":1048576,"bytes_per_size":1000000000000,"max_iters":1000000}}'
KILN_LOG_LEVEL=debug "$KILN" run --launcher local --ranks 3 --out "$OUT" --localize-by off --deadline 8 \
  --tests host.inventory,mpi.all_reduce --params "$PARAMS" > "$TMP/run.out" 2> "$TMP/run.err" &
pid=$!
if ! wait_for "$TMP/run.err" "round 1: host.inventory" 60; then
  bad "the campaign never started its rounds"; cat "$TMP/run.err"; kill $pid; finish
fi
# Local rank 2: not the node agent (local rank 0), which speaks for its node's ranks.
slow=$(local_worker $pid 2)
[ -n "$slow" ] || { bad "no worker with local rank 2"; kill $pid; finish; }
rank=$(tr '\0' '\n' < "/proc/$slow/environ" | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
( while kill -STOP "$slow" 2>/dev/null; do sleep 0.9; kill -CONT "$slow" 2>/dev/null; sleep 0.1; done ) &
throttle=$!
pass "throttling rank $rank (pid $slow): stopped 0.9 s of every second"
wait $pid
rc=$?
kill "$throttle" 2>/dev/null; wait "$throttle" 2>/dev/null; kill -CONT "$slow" 2>/dev/null
grep "last said" "$TMP/run.err" | sed 's/^.*round/round/'
[ $rc -eq 1 ] && pass "campaign ended with findings (exit 1)" || { bad "exit $rc, want 1"; tail -20 "$TMP/run.err"; }
python3 - "$OUT" "$rank" <<'PY' && pass "group.behind names rank $rank; no other rank lost or timed out" || bad "report content"
import json, sys
out, rank = sys.argv[1], sys.argv[2]
rep = json.load(open(out + "/report.json"))
fs = rep["findings"]
for f in fs: print("finding:", f["code"], f["entity"]["id"], "-", f["summary"])
behind = [f for f in fs if f["code"] == "group.behind"]
assert len(behind) == 1 and behind[0]["entity"]["id"] == rank, behind
print("evidence:", json.dumps(behind[0]["evidence"]))
others = [f for f in fs if f["code"] in ("rank.lost", "test.timeout") and f["entity"]["id"] != rank]
assert not others, others
PY
# The journal keeps the ranks' progress: a report rebuilt from the run directory says the same.
rebuilt_report_same "$OUT" 1
finish
