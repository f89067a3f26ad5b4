#!/usr/bin/env bash
# A burn-in job cancelled with scancel mid-campaign: kiln reports CANCELLED, keeps the results it
# had, exits 2, and no kiln-worker is left on any node.
source "$(dirname "$0")/slurm_lib.sh"
need_testbed 2
OUT="$TMP/run"
# Long enough that the cancel lands mid-campaign: several all-reduce sweeps up to 16 MiB.
"$KILN" run --partition debug --nodes 2 --out "$OUT" --localize-by off \
  --tests host.inventory,mpi.all_reduce,mpi.all_reduce,mpi.all_reduce,mpi.all_reduce \
  --params '{"mpi.all_reduce":{"max_bytes":16777216}}' > "$TMP/summary.txt" 2> "$TMP/stderr.txt" &
kiln_pid=$!
job=""
deadline=$((SECONDS + 120))
# Wait for the job and for the first all-reduce results, then cancel.
while [ $SECONDS -lt $deadline ]; do
  f=$(ls "$OUT"/slurm-*.out 2>/dev/null | head -1)
  [ -n "$f" ] && job=$(basename "$f" .out) && job=${job#slurm-}
  if [ -n "$job" ] && grep -q '"mpi.all_reduce"' "$OUT/results.jsonl" 2>/dev/null; then break; fi
  kill -0 $kiln_pid 2>/dev/null || break
  sleep 0.2
done
if [ -z "$job" ] || ! kill -0 $kiln_pid 2>/dev/null; then
  bad "no running job to cancel (job '$job'; kiln running: $(kill -0 $kiln_pid 2>/dev/null && echo yes || echo no))"
  cat "$TMP/stderr.txt"
  kill $kiln_pid 2>/dev/null
  wait $kiln_pid
  finish
fi
had=$(wc -l < "$OUT/results.jsonl")
scancel "$job" && pass "scancel $job with $had results in" || bad "scancel $job failed"
# kiln must notice and end on its own well within its deadlines.
for i in $(seq 1 600); do kill -0 $kiln_pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $kiln_pid 2>/dev/null; then bad "kiln still running 60 s after scancel"; kill $kiln_pid; fi
wait $kiln_pid
rc=$?
[ $rc -eq 2 ] && pass "kiln exit 2" || { bad "kiln exit $rc, want 2"; cat "$TMP/summary.txt" "$TMP/stderr.txt"; }
grep -qE "job $job CANCELLED" "$TMP/summary.txt" && pass "summary says job $job CANCELLED" \
  || bad "summary does not say CANCELLED: $(cat "$TMP/summary.txt")"
python3 - "$OUT" "$job" "$had" <<'PY' && pass "report: verdict error, CANCELLED, results kept" || bad "report content"
import json, sys
out, job, had = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [json.loads(l) for l in open(out + "/results.jsonl")]
rows = [r for r in lines if r["record"] == "result"]
assert len(lines) >= had > 0, (len(lines), had)
rep = json.load(open(out + "/report.json"))
assert rep["verdict"] == "error", rep["verdict"]
assert f"job {job} CANCELLED" in rep["error"], rep["error"]
assert rep["launch"] == {"ok": False, "state": rep["launch"]["state"]} and "CANCELLED" in rep["launch"]["state"]
assert rep["results"]["total"] == len(rows), (rep["results"]["total"], len(rows))
PY
state=$(squeue --noheader --states=all --jobs="$job" --format=%T 2>/dev/null)
[ "$state" = CANCELLED ] && pass "squeue says job $job CANCELLED" || bad "job $job state '$state'"
no_workers_left
finish
