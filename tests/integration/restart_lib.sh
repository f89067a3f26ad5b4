# The restart drill (test_restart_after_timeout.sh runs it with the local launcher,
# tests/cluster/test_restart_slurm.sh on the SLURM testbed): a group collective that overruns its
# deadline leaves MPI state that cannot be trusted (a request still outstanding). Rank 1 of 4 is
# throttled (SIGSTOP 0.9 s of each second) during round 1's mpi.all_reduce so that the round times
# out for real; the coordinator then restarts the workers (mpirun again, or a new srun step in the
# same allocation) and the later rounds run on all 4 ranks; no rank is reported lost, and the
# journal and report show the restart. Needs lib.sh and store_lib.sh.
#
# restart_drill LAUNCH_ARGS...: e.g. --launcher local --ranks 4. Sets OUT.
restart_drill() {
OUT="$TMP/run"
# One 64 MiB size, 50 iterations: seconds on 4 ranks unthrottled, far past 4 s throttled.
PARAMS='{"mpi.all_reduce":{"min_bytes":67108864,"max_bytes":67108864,"bytes_per_size":68719476736,"max_iters":50},
"mpi.alltoall":{"max_bytes":65536}}'
"$KILN" run "$@" --out "$OUT" --localize-by off --deadline 4 \
  --tests mpi.all_reduce,mpi.alltoall,mpi.alltoall --params "$PARAMS" > "$TMP/run.out" 2> "$TMP/run.err" &
pid=$!
if ! wait_for "$TMP/run.err" "round 1: mpi.all_reduce" 120; then
  bad "the campaign never reached round 1"; cat "$TMP/run.err"; kill $pid; return 1
fi
victim=""
for p in $(pgrep -f "$WORKER"); do
  tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qxE '(OMPI_COMM_WORLD_RANK|SLURM_PROCID)=1' && victim=$p
done
[ -n "$victim" ] || { bad "no worker with rank 1"; kill $pid; return 1; }
# Throttle rank 1 until round 1 ends (or 60 s): stopped 0.9 s of each second.
cycles=0
while ! grep -qE "round 1 (ended|cut short)" "$TMP/run.err" && [ $cycles -lt 60 ] && kill -STOP "$victim" 2>/dev/null; do
  sleep 0.9; kill -CONT "$victim" 2>/dev/null; sleep 0.1; cycles=$((cycles + 1))
done
kill -CONT "$victim" 2>/dev/null
echo "figures: rank 1 (pid $victim) throttled for $cycles s"
timeout 180 tail --pid=$pid -f /dev/null
if kill -0 $pid 2>/dev/null; then bad "kiln run hung (still running after 180 s)"; kill $pid; sleep 1; fi
wait $pid; rc=$?
echo "figures: kiln run exit $rc"
grep -E "round [0-9]+ (ended|cut)|lost rank|restart" "$TMP/run.err" | sed 's/^/  /'
grep -q "round 1 left MPI state untrusted on ranks .*: restarting the workers (restart 1)" "$TMP/run.err" &&
  grep -q "restart 1: 4 of 4 ranks back" "$TMP/run.err" && pass "the restart is said as it happens" || bad "no restart progress lines"
python3 - "$OUT" <<'PY' && pass "round 1 timed out, later rounds ran on all 4 ranks, no rank.lost" || { bad "report content"; cat "$TMP/run.err"; tail -30 "$OUT/workers.log"; }
import json, sys
out = sys.argv[1]
rep = json.load(open(out + "/report.json"))
plan = [r for r in rep["rounds"] if r["phase"] == "plan"]
print("  rounds:", [(r["id"], r["finished"], r["done"]) for r in plan])
print("  ranks:", {r["rank"]: r["state"] for r in rep["ranks"]})
print("  findings:", sorted({f["code"] for f in rep["findings"]}))
ends = [json.loads(l) for l in open(out + "/results.jsonl") if '"record":"end"' in l]
print("  round 1 check ends:", sorted((e["rank"], e["status"]) for e in ends if e["round_id"] == 1))
assert any(e["status"] == "timeout" for e in ends if e["round_id"] == 1), "round 1 did not time out"
assert not [f for f in rep["findings"] if f["code"] == "rank.lost"], "a rank was reported lost"
assert len(plan) == 3 and all(r["finished"] for r in plan[1:]), plan
for r in plan[1:]:
    assert r["done"] == [0, 1, 2, 3], r
    ok = sorted(e["rank"] for e in ends if e["round_id"] == r["id"] and e["status"] == "pass")
    assert ok == [0, 1, 2, 3], (r["id"], ok)
PY
python3 - "$OUT" <<'PY' && pass "the journal and the report show the restart" || bad "no restart in the journal or report"
import json, sys
out = sys.argv[1]
ev = [json.loads(l) for l in open(out + "/journal.jsonl")]
rs = [e for e in ev if e.get("event") == "restart"]
print("  journal restarts:", rs)
assert len(rs) == 1 and rs[0]["round"] == 1 and 1 in rs[0]["untrusted"], rs
rep = json.load(open(out + "/report.json"))
assert rep["restarts"] and rep["restarts"][0]["round"] == 1, rep.get("restarts")
PY
rebuilt_report_same "$OUT" 1 ranks results verdict restarts
}
