#!/usr/bin/env bash
# Bad SLURM requests: an unknown partition, more nodes than exist, a hostlist naming a missing
# node, sbatch not installed. Each: one clear line, exit 2, no run directory, no job submitted.
source "$(dirname "$0")/slurm_lib.sh"
need_testbed 1
jobs_before=$(squeue --noheader --states=all --format=%i | sort)

# expect_one_line NAME PATTERN OUTDIR -- command...
expect_one_line() {
  local what=$1 pattern=$2 outdir=$3
  shift 4
  expect_exit 2 "$what" -- "$@"
  if [ "$(printf '%s\n' "$ERR" | wc -l)" -eq 1 ] && printf '%s\n' "$ERR" | grep -qE -e "$pattern"; then
    pass "$what: one line: $ERR"
  else
    bad "$what: want one line matching /$pattern/, got: $ERR"
  fi
  [ -e "$outdir" ] && bad "$what created $outdir" || pass "$what wrote nothing"
}

expect_one_line "unknown partition" "unknown partition 'nosuch'.*debug" "$TMP/p" -- \
  "$KILN" run --partition nosuch --nodes 1 --out "$TMP/p"
more=$((TESTBED_NODES + 1))
expect_one_line "more nodes than exist" "--nodes $more is more than partition debug has \($TESTBED_NODES" "$TMP/n" -- \
  "$KILN" run --partition debug --nodes $more --out "$TMP/n"
expect_one_line "hostlist naming a missing node" "node node99 does not exist" "$TMP/w" -- \
  "$KILN" run --nodelist 'node[1,99]' --out "$TMP/w"
expect_one_line "missing nodes in a range" "nodes node\[98-99\] do not exist" "$TMP/w2" -- \
  "$KILN" run --launcher slurm --nodelist 'node[1,98-99]' --out "$TMP/w2"
# PATH without SLURM's commands: an empty directory.
mkdir -p "$TMP/emptybin"
expect_one_line "sbatch not installed (--launcher slurm)" "needs sbatch, which is not on PATH" "$TMP/s" -- \
  env PATH="$TMP/emptybin" "$KILN" run --launcher slurm --nodes 1 --out "$TMP/s"
expect_one_line "sbatch not installed (auto with --nodes)" "needs sbatch, which is not on PATH" "$TMP/s2" -- \
  env PATH="$TMP/emptybin" "$KILN" run --partition debug --nodes 1 --out "$TMP/s2"
expect_one_line "slurm without a node count" "needs --nodes N or --nodelist" "$TMP/c" -- \
  "$KILN" run --launcher slurm --out "$TMP/c"

jobs_after=$(squeue --noheader --states=all --format=%i | sort)
[ "$jobs_before" = "$jobs_after" ] && pass "no job was submitted" || bad "jobs appeared: $(comm -13 <(echo "$jobs_before") <(echo "$jobs_after"))"
finish
