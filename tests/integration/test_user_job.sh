#!/usr/bin/env bash
# A user's own job through jobs/kiln-user-job.sh and kiln ingest, without SLURM: --launcher local:N,
# and KILN_SRUN pointing at a stand-in srun. Jobs that pass, fail, print nothing, print broken
# metric lines (bad JSON, NaN, a 100 KB line, deep nesting), and one read through --match. Each run
# directory is checked against the schemas (lib.sh), read back by kiln report, and imported into
# a history database.
source "$(dirname "$0")/lib.sh"
JOB="${KILN_SRC:-$(dirname "$0")/../..}/jobs/kiln-user-job.sh"
export KILN="$KILN_BIN/kiln"

# A job whose figures depend on the rank, so the test can tell the tasks apart.
cat > "$TMP/good.sh" <<'SH'
#!/usr/bin/env bash
r=$RANK
echo "step 1 loss 2.3"
for v in 100 110 120; do echo "KILN_METRIC {\"name\":\"tokens_per_s\",\"value\":$((v + r * 1000)),\"unit\":\"tok/s\"}"; done
echo "KILN_METRIC {\"name\":\"step_time_s\",\"value\":0.5,\"unit\":\"s\"}"
SH
chmod +x "$TMP/good.sh"

"$JOB" --launcher local:3 --out "$TMP/good" -- "$TMP/good.sh" > "$TMP/good.out" 2> "$TMP/good.err"
rc=$?
[ $rc -eq 0 ] && pass "a job that prints its metrics: exit 0" || { bad "good job exit $rc"; cat "$TMP/good.err"; }
grep -q "model.user_job tokens_per_s 1110.00 tok/s" "$TMP/good.out" && pass "the summary shows rank 1's throughput" ||
  { bad "summary"; cat "$TMP/good.out"; }
python3 - "$TMP/good" <<'PY' && pass "one result per task and metric: the median, samples, min, max" || bad "good job records"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
tok = {r["rank"]: r for r in rows if r["record"] == "result" and r["metric"] == "tokens_per_s"}
assert sorted(tok) == [0, 1, 2], tok
for rank, r in tok.items():
    assert r["test"] == "model.user_job" and r["unit"] == "tok/s" and r["status"] == "pass", r
    assert r["value"] == 110 + rank * 1000, r
    assert r["extra"] == {"samples": 3, "min": 100 + rank * 1000, "max": 120 + rank * 1000}, r
ends = [r for r in rows if r["record"] == "end"]
assert len(ends) == 3 and all(e["status"] == "pass" for e in ends), ends
rep = json.load(open(sys.argv[1] + "/report.json"))
assert rep["verdict"] == "pass", (rep["verdict"], rep["findings"])
PY
cp "$TMP/good/report.json" "$TMP/report.before"
expect_exit 0 "kiln report rebuilds the user job's report" -- "$KILN" report "$TMP/good"
json "$TMP/good/report.json" 'd["verdict"]' | grep -qx pass && pass "rebuilt verdict pass" || bad "rebuilt verdict"
expect_exit 0 "kiln history import takes the user job's run" -- "$KILN" history import "$TMP/good" --history "$TMP/hist.db"
"$KILN" history "$(hostname -s)" --history "$TMP/hist.db" > "$TMP/hist.out" 2>&1
grep -q "model.user_job" "$TMP/hist.out" && pass "the node's history holds model.user_job" || { bad "history"; cat "$TMP/hist.out"; }

# A run whose report says why it failed: exit 1, a test.error finding whose summary has REASON.
expect_failed() {
  local name=$1 reason=$2
  shift 2
  "$JOB" --out "$TMP/$name" "$@" > "$TMP/$name.out" 2> "$TMP/$name.err"
  local got=$?
  [ $got -eq 1 ] && pass "$name: exit 1" || { bad "$name: exit $got, want 1"; cat "$TMP/$name.err"; }
  python3 - "$TMP/$name/report.json" "$reason" <<'PY' && pass "$name: error finding says '$reason'" || bad "$name: report"
import json, sys
rep = json.load(open(sys.argv[1]))
assert rep["verdict"] == "fail", rep["verdict"]
errs = [f for f in rep["findings"] if f["code"] == "test.error"]
assert any(sys.argv[2] in f["summary"] for f in errs), rep["findings"]
PY
}

printf '#!/bin/sh\necho "KILN_METRIC {\\"name\\":\\"tokens_per_s\\",\\"value\\":5,\\"unit\\":\\"tok/s\\"}"\n[ "$RANK" = 1 ] && exit 3\nexit 0\n' > "$TMP/fails.sh"
printf '#!/bin/sh\necho "training..."\n' > "$TMP/silent.sh"
cat > "$TMP/hostile.sh" <<'SH'
#!/usr/bin/env bash
case $RANK in
  0) echo 'KILN_METRIC {"name":"tokens_per_s","value":NaN,"unit":"tok/s"}' ;;
  1) echo 'KILN_METRIC {"name":"tokens_per_s","value":1,' ;;
  2) printf 'KILN_METRIC {"name":"tokens_per_s","value":1,"unit":"%0100000d"}\n' 0 ;;
  3) printf 'KILN_METRIC %s1%s\n' "$(printf '[%.0s' {1..5000})" "$(printf ']%.0s' {1..5000})" ;;
  4) echo 'KILN_METRIC {"name":"tokens_per_s","value":1e999,"unit":"tok/s"}' ;;
esac
SH
chmod +x "$TMP/fails.sh" "$TMP/silent.sh" "$TMP/hostile.sh"
expect_failed fails "the job exited with status 3" --launcher local:2 -- "$TMP/fails.sh"
expect_failed silent "printed no KILN_METRIC line" --launcher local:2 -- "$TMP/silent.sh"
expect_failed missing "the job exited with status 127" --launcher local:1 -- "$TMP/no-such-command"
expect_failed hostile "not a JSON object" --launcher local:5 -- "$TMP/hostile.sh"
python3 - "$TMP/hostile/results.jsonl" <<'PY' && pass "hostile lines: every task an error, each with its reason" || bad "hostile reasons"
import json, sys
ends = {r["rank"]: r["reason"] for r in map(json.loads, open(sys.argv[1])) if r["record"] == "end"}
assert sorted(ends) == [0, 1, 2, 3, 4], ends
assert "not a JSON object" in ends[0] and "not a JSON object" in ends[1], ends
assert "longer than 16384 bytes" in ends[2], ends
assert "deeper than 4 levels" in ends[3], ends
assert "not finite" in ends[4] or "not a JSON object" in ends[4], ends
PY

# --match: a job that cannot be changed prints its own words.
printf '#!/bin/sh\necho "iter 10 | throughput 2048.5 tokens/s"\necho "iter 20 | throughput 2051.5 tokens/s"\n' > "$TMP/words.sh"
chmod +x "$TMP/words.sh"
"$JOB" --launcher local:1 --out "$TMP/match" --match 'tokens_per_s:tok/s:throughput ([0-9.]+) tokens/s' -- "$TMP/words.sh" \
  > /dev/null 2> "$TMP/match.err"
rc=$?
[ $rc -eq 0 ] && pass "--match: exit 0" || { bad "--match exit $rc"; cat "$TMP/match.err"; }
json "$TMP/match/report.json" 'd["verdict"]' | grep -qx pass && grep -q '"value":2050' "$TMP/match/results.jsonl" &&
  pass "--match: the median of the matched numbers" || bad "--match figure"
# kiln ingest on its own: a log of junk bytes (no task lines) from stdin, a RUN_DIR that exists.
for _ in $(seq 2000); do printf '\000\377\tjunk\t\t%s\n' "$RANDOM"; done | "$KILN" ingest "$TMP/junk" --from - --ranks 2 \
  > /dev/null 2>&1
rc=$?
[ $rc -eq 1 ] && [ "$(grep -c 'wrote nothing' "$TMP/junk/results.jsonl")" -eq 2 ] &&
  pass "a log of junk: exit 1, both tasks 'wrote nothing'" || bad "junk log: exit $rc"
expect_exit 2 "kiln ingest refuses a RUN_DIR that exists" -- "$KILN" ingest "$TMP/good" --from /dev/null
expect_exit 2 "--match without a group is refused" -- "$KILN" ingest "$TMP/m2" --from /dev/null --match 'x:s:abc'

# KILN_SRUN: a stand-in for srun that starts --ntasks-per-node copies of the task.
cat > "$TMP/srun" <<'SH'
#!/usr/bin/env bash
n=${1#--ntasks-per-node=}; shift
for ((i = 0; i < n; i++)); do SLURM_PROCID=$i SLURM_NTASKS=$n "$@" > "$0.$i" & done
wait
for ((i = 0; i < n; i++)); do cat "$0.$i"; done
SH
chmod +x "$TMP/srun"
KILN_SRUN="$TMP/srun" SLURM_JOB_NUM_NODES=1 KILN_TASKS_PER_NODE=2 "$JOB" --out "$TMP/srun-run" -- "$TMP/good.sh" \
  > /dev/null 2> "$TMP/srun.err"
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c '"record":"end"' "$TMP/srun-run/results.jsonl")" -eq 2 ] &&
  pass "KILN_SRUN: the srun path, two tasks" || { bad "KILN_SRUN exit $rc"; cat "$TMP/srun.err"; }
expect_exit 2 "kiln run refuses model.user_job in --tests" -- "$KILN" run --launcher local --ranks 1 --out "$TMP/r" --tests model.user_job
finish
