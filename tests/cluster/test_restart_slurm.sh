#!/usr/bin/env bash
# A group collective that overruns its deadline, on the SLURM testbed: the workers are restarted in
# a new srun step of the same allocation (the burn-in job script runs srun again when the step ends
# with the restart code), and the later rounds run on all 4 ranks (the drill is in
# tests/integration/restart_lib.sh).
source "$(dirname "$0")/slurm_lib.sh"
source "$(dirname "$0")/../integration/store_lib.sh"
source "$(dirname "$0")/../integration/restart_lib.sh"
need_testbed 4
restart_drill --partition debug --nodes 4
job_out=$(grep -rl "starting step 2" "$OUT" 2>/dev/null | head -1)
[ -n "$job_out" ] && pass "the job started a second srun step in the same allocation ($(basename "$job_out"))" \
  || { bad "no second srun step in the job's output"; ls "$OUT"; }
no_workers_left
finish
