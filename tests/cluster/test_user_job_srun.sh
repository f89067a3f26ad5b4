#!/usr/bin/env bash
# jobs/kiln-user-job.sh under real SLURM (sbatch on the testbed, srun inside the allocation): a
# user's job (a stand-in for a PyTorch FSDP script: python printing KILN_METRIC lines, no GPU
# here) on 3 nodes is recorded as model.user_job with each node's throughput, exit 0; the same job
# with the task on node2 exiting 3 is exit 1 with an error naming node2, the others' figures kept.
source "$(dirname "$0")/slurm_lib.sh"
need_testbed 3
JOB="$TMP/job.py"
cat > "$JOB" <<'PY'
import os, json, sys, time
r = int(os.environ.get("RANK", "-1"))
for step in range(5):
    time.sleep(0.05)
    print("KILN_METRIC " + json.dumps({"name": "tokens_per_s", "value": 1000.0 + 10 * r + step, "unit": "tok/s"}), flush=True)
sys.exit(int(os.environ.get("FAIL_RANK_EXIT", "0")) if str(r) == os.environ.get("FAIL_RANK", "") else 0)
PY
chmod 755 "$TMP" "$JOB"
# run_job OUT [ENV=VAL ...]: the job script on 3 nodes through sbatch --wait; sets RC (the job's exit).
run_job() {
  local out=$1; shift
  env "$@" sbatch --wait -p debug -N 3 --ntasks-per-node=1 -o "$out.slurm" \
    --wrap "KILN=$KILN KILN_TASKS_PER_NODE=1 bash $(cd "$(dirname "$0")/../.." && pwd)/jobs/kiln-user-job.sh --out $out -- python3 $JOB" \
    > /dev/null 2>&1
  RC=$?
}
run_job "$TMP/ok"
[ $RC -eq 0 ] && pass "3 tasks, every one with metrics: job exit 0" || { bad "job exit $RC"; cat "$TMP/ok.slurm"; }
python3 - "$TMP/ok" <<'PYC' && pass "one model.user_job figure per node, the median of its lines" || bad "figures"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
figs = {r["host"]: r["value"] for r in rows if r.get("test") == "model.user_job" and r.get("metric") == "tokens_per_s"}
print(figs)
assert set(figs) == {"node1", "node2", "node3"}, figs
assert sorted(figs.values()) == [1002.0, 1012.0, 1022.0], figs
rep = json.load(open(sys.argv[1] + "/report.json"))
assert rep["verdict"] == "pass" and rep["findings"] == [], (rep["verdict"], rep["findings"])
PYC
run_job "$TMP/fail" FAIL_RANK=1 FAIL_RANK_EXIT=3
[ $RC -eq 1 ] && pass "the task on node2 exited 3: job exit 1" || { bad "job exit $RC"; cat "$TMP/fail.slurm"; }
python3 - "$TMP/fail" <<'PYC' && pass "an error finding names node2's task and its exit status" || bad "failure report"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
print([(f["code"], f["summary"]) for f in rep["findings"]])
assert rep["verdict"] == "fail", rep["verdict"]
errs = [f for f in rep["findings"] if f["code"] == "test.error"]
assert errs and all("node2" in json.dumps(f) for f in errs), rep["findings"]
assert any("3" in f["summary"] for f in errs), errs
PYC
finish
