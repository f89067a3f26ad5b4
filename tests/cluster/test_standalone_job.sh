#!/usr/bin/env bash
# A burn-in job that stands alone: `kiln job render` writes the batch script, plain `sbatch --wait`
# runs it on the testbed's 6 nodes (the coordinator on the job's first node, the workers as an srun
# step of the same job), the report lands in the job's directory, and the job's exit code is the
# verdict's: 0 on the healthy testbed, 1 with node3's port slowed (node.slow node3).
source "$(dirname "$0")/localize_lib.sh"
need_testbed 6
at_exit clear_faults
clear_faults
JOB="$TMP/kiln-burnin.sbatch"
"$KILN" job render --out "$JOB" -- --tests host.inventory,mpi.all_reduce --params '{"mpi.all_reduce":{"max_bytes":1048576}}' \
  "${LOCALIZE_ARGS[@]}" > "$TMP/render.out" 2>&1 && [ -x "$JOB" ] && pass "kiln job render wrote $JOB" \
  || { bad "kiln job render"; cat "$TMP/render.out"; finish; }
bash -n "$JOB" && pass "the script parses" || bad "bash -n"

# run_job NAME: sbatch --wait in $TMP/NAME; sets JRC (sbatch's exit: the job's) and JOBDIR.
run_job() {
  mkdir -p "$TMP/$1"
  local out jobid
  out=$(cd "$TMP/$1" && sbatch --nodes=6 --wait --parsable "$JOB" 2>&1)
  JRC=$?
  jobid=$(echo "$out" | head -n1 | cut -d';' -f1)
  JOBDIR="$TMP/$1/kiln-$jobid"
  echo "$1: job $jobid, sbatch --wait exit $JRC"
}
verdict() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$1/report.json" 2>/dev/null; }

run_job healthy
F=$(findings "$JOBDIR" 2>/dev/null)
[ "$JRC" -eq 0 ] && [ "$(verdict "$JOBDIR")" = pass ] && [ -z "$F" ] \
  && pass "healthy: the job exits 0, report.json in the job's directory says pass" \
  || { bad "healthy: exit $JRC, verdict $(verdict "$JOBDIR"), findings: $F"; tail -30 "$TMP"/healthy/kiln-burnin-*.out; }
grep -q "launching 6 rank(s) with step" "$TMP"/healthy/kiln-burnin-*.out && pass "6 ranks, started as a step of the job" \
  || bad "the job output does not show a step launch"

"$TESTBED" fault slow node3 100mbit > /dev/null || { echo "SKIP: cannot shape node3"; exit 77; }
run_job slow
F=$(findings "$JOBDIR" 2>/dev/null)
echo "findings:"; echo "$F"
[ "$JRC" -eq 1 ] && [ "$(verdict "$JOBDIR")" = fail ] && echo "$F" | grep -qx "node.slow node node3" \
  && pass "node3 slowed: the job exits 1, node.slow node3 in the job's report" \
  || { bad "slow: exit $JRC, verdict $(verdict "$JOBDIR")"; tail -30 "$TMP"/slow/kiln-burnin-*.out; }
finish
