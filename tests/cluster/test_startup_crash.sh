#!/usr/bin/env bash
# A worker that dies of a signal before any worker connected (seen about once in twenty drill
# campaigns, inside Open MPI's start-up): the campaign ends the job and launches it once more, runs
# to its verdict, and keeps the crash in the report. The worker here is a wrapper that kills itself
# with SIGSEGV on rank 1 of the first job only; the other ranks wait in MPI start-up for it, as
# they did in the drill. A wrapper that crashes every time is launched again once only, and the
# campaign ends in error naming the crash.
source "$(dirname "$0")/slurm_lib.sh"
need_testbed 3

# wrapper NAME ONCE: a worker that segfaults on rank 1 (once: only while $TMP/NAME.crashed is absent).
wrapper() {
  local w="$TMP/$1-worker.sh"
  cat > "$w" <<EOF
#!/bin/bash
if [ "\${SLURM_PROCID:-}" = 1 ] && { [ "$2" = always ] || [ ! -e "$TMP/$1.crashed" ]; }; then
  echo "crash \$(date +%s)" >> "$TMP/$1.crashed"
  kill -SEGV \$\$
fi
exec "$WORKER" "\$@"
EOF
  chmod +x "$w"
  echo "$w"
}

# once: crashes in the first job, runs in the second.
W=$(wrapper once once)
OUT="$TMP/once"
start=$SECONDS
# Localization off: on the testbed's two shared cores a healthy pair can sit near the default
# cut-off (see test_slurm_campaign.sh), and this test is about the relaunch, not the fabric.
"$KILN" run --partition debug --nodes 3 --out "$OUT" --worker "$W" --connect-timeout 20 --localize-by off \
  --tests host.inventory,mpi.all_reduce --params '{"mpi.all_reduce":{"max_bytes":65536}}' \
  > "$TMP/once.out" 2> "$TMP/once.err"
rc=$?
echo "once: exit $rc in $((SECONDS - start)) s; crashes: $(wc -l < "$TMP/once.crashed" 2>/dev/null || echo 0)"
grep -E "launched once more|launched again" "$TMP/once.err" "$TMP/once.out" | head -3
[ "$rc" -eq 0 ] && pass "crash at start of the first job: launched once more, exit 0" \
  || { bad "exit $rc, want 0"; tail -20 "$TMP/once.err"; tail -20 "$TMP/once.out"; cat "$OUT/workers.log"; }
python3 - "$OUT/report.json" <<'PY' && pass "report.json: verdict pass, launch_retries names rank 1's Segmentation fault" || bad "report content"
import json, sys
rep = json.load(open(sys.argv[1]))
print("verdict:", rep["verdict"], "retries:", json.dumps(rep.get("launch_retries"))[:300])
assert rep["verdict"] == "pass", rep["verdict"]
r = rep["launch_retries"]
assert len(r) == 1 and r[0]["first_ends"][0]["rank"] == 1 and "Segmentation fault" in r[0]["first_ends"][0]["how"], r
assert len(rep["ranks"]) == 3 and all(x["results"] > 0 for x in rep["ranks"]), rep["ranks"]
PY
grep -q "launched again: rank 1 on node2 (Segmentation fault)" "$TMP/once.out" \
  && pass "the summary says the workers were launched again and why" || { bad "no 'launched again' line"; cat "$TMP/once.out"; }

# always: crashes in both jobs; the campaign gives up after the second, in error.
W=$(wrapper always always)
OUT="$TMP/always"
wait_idle
"$KILN" run --partition debug --nodes 3 --out "$OUT" --worker "$W" --connect-timeout 20 --tests host.inventory \
  > "$TMP/always.out" 2> "$TMP/always.err"
rc=$?
n=$(wc -l < "$TMP/always.crashed" 2>/dev/null || echo 0)
echo "always: exit $rc, $n crash(es)"
[ "$rc" -ne 0 ] && [ "$n" -eq 2 ] && pass "a worker that crashes every time: launched once more only, then exit $rc" \
  || { bad "exit $rc with $n crashes, want non-zero with 2"; tail -20 "$TMP/always.err"; }
python3 - "$OUT/report.json" <<'PY' && pass "report.json names the crash: rank.lost for rank 1 and one launch retry" || bad "report content (always)"
import json, sys
rep = json.load(open(sys.argv[1]))
codes = sorted((f["code"], f["entity"]["id"]) for f in rep["findings"])
print("verdict:", rep["verdict"], "findings:", codes, "error:", rep.get("error"))
assert ("rank.lost", "1") in codes, codes
assert len(rep.get("launch_retries", [])) == 1, rep.get("launch_retries")
PY
finish
