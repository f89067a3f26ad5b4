# Helpers for the crash, kill and full-disk tests (sourced after lib.sh).

# A plan of N mpi.all_reduce rounds after host.inventory: long enough (about 0.5 s a round on 2
# ranks) to kill something mid-campaign.
long_plan() {
  local n=$1 t="host.inventory" i
  for i in $(seq "$n"); do t+=",mpi.all_reduce"; done
  echo "$t"
}
LONG_PARAMS='{"mpi.all_reduce":{"max_bytes":16777216}}'

# wait_for FILE PATTERN SECONDS: until PATTERN shows in FILE; false on timeout.
wait_for() {
  local i
  for i in $(seq $(($3 * 10))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# local_worker KILN_PID LOCAL_RANK: the pid of the kiln-worker of that local rank under the
# campaign's mpirun (empty when none).
local_worker() {
  local mpirun_pid p found=""
  mpirun_pid=$(pgrep -P "$1" mpirun | head -1)
  for p in $(pgrep -P "$mpirun_pid" -f kiln-worker); do
    tr '\0' '\n' < "/proc/$p/environ" | grep -qx "OMPI_COMM_WORLD_LOCAL_RANK=$2" && found=$p
  done
  echo "$found"
}

# acked STDERR: how many records the coordinator had on disk and acknowledged, by its last
# debug line (KILN_LOG_LEVEL=debug); 0 when none.
acked() {
  local n
  n=$(grep -o '[0-9]* record(s) on disk, acknowledged' "$1" | tail -1 | awk '{print $1}')
  echo "${n:-0}"
}

# lines_parse FILE: every line of FILE is a JSON object with a record kind (no torn line).
lines_parse() {
  python3 - "$1" <<'PY'
import json, sys
for n, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    assert line.endswith("\n"), f"line {n} has no newline"
    assert json.loads(line)["record"] in ("result", "end"), f"line {n}"
PY
}

# result_lines FILE: result records in results.jsonl.
result_lines() { grep -c '"record":"result"' "$1"; }

# one_rank_lost OUT RANK NRANKS: the report has rank.lost for RANK only, every other rank is ok,
# the 7 plan rounds of long_plan 6 all finished and the last ran on the other ranks (or on all,
# after a restart); some result of
# the last round is in results.jsonl. Prints nothing; exit status says.
one_rank_lost() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
out, rank, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rep = json.load(open(out + "/report.json"))
lost = [f for f in rep["findings"] if f["code"] == "rank.lost"]
assert [f["entity"]["id"] for f in lost] == [str(rank)], lost
states = {r["rank"]: r["state"] for r in rep["ranks"]}
assert states[rank] == "lost" and all(s == "ok" for r, s in states.items() if r != rank), states
plan = [r for r in rep["rounds"] if r["phase"] == "plan"]
assert len(plan) == 7 and all(r["finished"] for r in plan), [(r["id"], r["finished"]) for r in plan]
# The last round ran on the others, to its end; or on every rank when the others' timed-out
# collective made the coordinator restart the workers (the lost rank then runs again, and its loss
# is still the finding).
others = sorted(set(range(n)) - {rank})
assert plan[-1]["done"] in ([others, list(range(n))] if rep.get("restarts") else [others]), (plan[-1], rep.get("restarts"))
rows = [json.loads(l) for l in open(out + "/results.jsonl") if '"record":"result"' in l]
assert any(r["round_id"] == plan[-1]["id"] for r in rows)
PY
}

# rebuilt_report_same OUT RC [KEY...]: kiln report rebuilds OUT's report from the run directory
# (exit RC) with the same findings (code and entity) and the same value of each KEY.
rebuilt_report_same() {
  local out=$1 rc=$2
  shift 2
  cp "$out/report.json" "$TMP/live.json"
  expect_exit "$rc" "kiln report rebuilds the report" -- "$KILN" report "$out"
  python3 - "$TMP/live.json" "$out/report.json" "$@" <<'PY' && pass "the rebuilt report has the same findings${*:+ and $*}" || bad "rebuilt report differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda r: sorted((f["code"], f["entity"]["id"]) for f in r["findings"])
assert key(a) == key(b), (key(a), key(b))
for k in sys.argv[3:]:
    assert a.get(k) == b.get(k), (k, a.get(k), b.get(k))
PY
}
