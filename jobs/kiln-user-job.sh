#!/usr/bin/env bash
# kiln-user-job.sh: runs a user's own job (a PyTorch FSDP training script, say) under srun, one
# task per GPU, and records the throughput it prints as a kiln run directory (kiln ingest), so that
# kiln report, kiln diff and kiln history import read it like any kiln run. The contract the job
# follows is in docs/user-job.md: print lines
#
#   KILN_METRIC {"name":"tokens_per_s","value":12345.6,"unit":"tok/s"}
#
# (or give --match NAME:UNIT:REGEX for a job that cannot be changed). Inside an allocation:
#
#   sbatch --nodes=4 --gpus-per-node=8 --wrap \
#     'kiln-user-job.sh --out run-$SLURM_JOB_ID -- python3 fsdp_example.py --steps 200'
#
# Settings (each also from the environment): --out RUN_DIR (KILN_OUT; default kiln-userjob-JOBID),
# --launcher srun|local:N (KILN_USER_JOB_LAUNCHER; local:N runs N tasks on this machine without
# SLURM, for trying a script out and for tests), KILN_SRUN (the srun command, default srun),
# KILN_TASKS_PER_NODE (default the GPUs SLURM gave the node), KILN (the kiln binary).
# Exit code: kiln ingest's (0 every task passed, 1 a task failed or printed no metric, 2 bad input).
set -uo pipefail

usage() {
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
  echo "usage: kiln-user-job.sh [--out RUN_DIR] [--launcher srun|local:N] [--match NAME:UNIT:REGEX]... [--] COMMAND [ARGS...]"
}

# One task: the job's output, each line prefixed by RANK<TAB>HOST<TAB>, then its exit status.
run_task() {
  local rank=${SLURM_PROCID:-0} host=${SLURMD_NODENAME:-$(hostname -s)}
  # What torch.distributed's env:// init reads, from SLURM's names, unless the user set them.
  export RANK=${RANK:-$rank} WORLD_SIZE=${WORLD_SIZE:-${SLURM_NTASKS:-1}} LOCAL_RANK=${LOCAL_RANK:-${SLURM_LOCALID:-0}}
  export MASTER_PORT=${MASTER_PORT:-29500}
  if [[ -z ${MASTER_ADDR:-} ]]; then
    MASTER_ADDR=$(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null | head -n1)
    export MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
  fi
  "$@" 2>&1 | awk -v p="${rank}	${host}	" '{ print p $0; fflush() }'
  local rc=${PIPESTATUS[0]}
  printf '%s\t%s\tKILN_EXIT %d\n' "$rank" "$host" "$rc"
}

# local:N: N tasks on this machine, each into its own file (no interleaved lines), then one log.
run_local() {
  local n=$1 log=$2
  shift 2
  local pids=() i
  for ((i = 0; i < n; i++)); do
    SLURM_PROCID=$i SLURM_NTASKS=$n SLURM_LOCALID=$i run_task "$@" >"$log.$i" &
    pids+=($!)
  done
  wait "${pids[@]}"
  for ((i = 0; i < n; i++)); do cat "$log.$i" >>"$log" && rm -f "$log.$i"; done
}

if [[ ${1:-} == --task ]]; then  # srun started this script as one task of the job
  shift
  [[ ${1:-} == -- ]] && shift
  run_task "$@"
  exit 0
fi

out=${KILN_OUT:-kiln-userjob-${SLURM_JOB_ID:-$(date +%Y%m%d-%H%M%S)}}
launcher=${KILN_USER_JOB_LAUNCHER:-srun}
match=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --launcher) launcher=${2:?--launcher needs srun or local:N}; shift 2 ;;
    --match) match+=(--match "${2:?--match needs NAME:UNIT:REGEX}"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) echo "kiln-user-job.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[[ $# -gt 0 ]] || { echo "kiln-user-job.sh: name the job's COMMAND (see --help)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
kiln=${KILN:-$([[ -x $here/../../../bin/kiln ]] && echo "$here/../../../bin/kiln" || echo kiln)}
[[ -e $out ]] && { echo "kiln-user-job.sh: $out exists already" >&2; exit 2; }

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
log=$tmp/user-job.log
start=$(date +%s)
case $launcher in
  srun)
    per_node=${KILN_TASKS_PER_NODE:-${SLURM_GPUS_ON_NODE:-1}}
    ntasks=$((${SLURM_JOB_NUM_NODES:-0} * per_node))  # 0 outside an allocation: kiln ingest counts the tasks
    # shellcheck disable=SC2086  # KILN_SRUN may be a command with its own words
    ${KILN_SRUN:-srun} --ntasks-per-node="$per_node" "$here/$(basename "$0")" --task -- "$@" >"$log"
    echo "kiln-user-job.sh: srun exited with status $?" >&2 ;;
  local:[1-9]*)
    ntasks=${launcher#local:}
    [[ $ntasks =~ ^[0-9]{1,4}$ ]] || { echo "kiln-user-job.sh: --launcher local:N takes N of 1..9999" >&2; exit 2; }
    run_local "$ntasks" "$log" "$@" ;;
  *) echo "kiln-user-job.sh: --launcher must be srun or local:N (got '$launcher')" >&2; exit 2 ;;
esac
"$kiln" ingest "$out" --from "$log" --ranks "$ntasks" --seconds $(($(date +%s) - start)) "${match[@]}"
rc=$?
[[ -d $out ]] && cp "$log" "$out/user-job.log"
exit $rc
