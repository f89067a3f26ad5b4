#!/usr/bin/env bash
# The run history (docs/operator-guide.md, "Run history, diff and regressions"): three local campaigns recorded in one
# temporary database, kiln history NODE listing them, kiln diff, kiln history import being
# idempotent, and node.regressed. A local figure is too noisy to slow reliably by a fixed amount,
# so the regression path runs against a copy of the database whose earlier figures were raised
# 100-fold, with a threshold (0.9) no real run-to-run noise here reaches.
source "$(dirname "$0")/lib.sh"
DB="$TMP/history.sqlite"
PLAN=(--launcher local --ranks 2 --localize-by off --spec none --tests host.inventory,mpi.all_reduce
      --params '{"mpi.all_reduce":{"max_bytes":65536}}' --regression-threshold 0.9)
for i in 1 2 3; do
  "$KILN" run "${PLAN[@]}" --history "$DB" --out "$TMP/r$i" -q > "$TMP/r$i.out" 2> "$TMP/r$i.err"
  rc=$?
  [ "$rc" -eq 0 ] && pass "run $i: exit 0" || bad "run $i: exit $rc; $(tail -3 "$TMP/r$i.err")"
done
grep -q "warning" "$TMP/r3.err" && bad "run 3 warned: $(grep warning "$TMP/r3.err")" || pass "no history warning"
HOST=$(json "$TMP/r1/report.json" 'd["nodes"][0]["host"]')
[ "$(json "$TMP/r3/report.json" 'sum(f["code"] == "node.regressed" for f in d["findings"])')" = 0 ] \
  && pass "run 3: no node.regressed within noise" || bad "run 3 has node.regressed"

"$KILN" history "$HOST" --history "$DB" > "$TMP/h.out" 2> "$TMP/h.err"
[ "$(grep -c "^20.*  pass$" "$TMP/h.out")" = 3 ] && pass "kiln history $HOST: 3 runs" || bad "history: $(cat "$TMP/h.out" "$TMP/h.err")"
grep -q "mpi.all_reduce *busbw" "$TMP/h.out" && pass "history shows the busbw figure" || bad "no busbw in history"
R1=$(json "$TMP/r1/report.json" 'd["run_id"]'); R3=$(json "$TMP/r3/report.json" 'd["run_id"]')
[ "$(head -1 "$TMP/h.out" | awk '{print $3}')" = "$R3" ] && pass "newest first" || bad "first line: $(head -1 "$TMP/h.out")"
"$KILN" history "$HOST" --history "$DB" --last 2 --json > "$TMP/h.json"
[ "$(json "$TMP/h.json" 'len(d)')" = 2 ] && pass "--last 2 --json: 2 runs" || bad "--last 2: $(cat "$TMP/h.json")"
expect_exit 2 "unknown node" -- "$KILN" history no-such-node --history "$DB"
echo "$ERR" | grep -q "no runs recorded for no-such-node" && pass "unknown node says so" || bad "unknown node: $ERR"
expect_exit 2 "missing database" -- "$KILN" history "$HOST" --history "$TMP/none.sqlite"
for how in "--history off" "KILN_HISTORY=off"; do  # the error names what the user set
  if [ "$how" = "--history off" ]; then expect_exit 2 "history off ($how)" -- "$KILN" history "$HOST" --history off
  else expect_exit 2 "history off ($how)" -- env KILN_HISTORY=off "$KILN" history "$HOST"; fi
  echo "$ERR" | grep -q "history is off (--history off, or KILN_HISTORY=off)" && pass "$how: the error says history is off" \
    || bad "$how: $ERR"
done
expect_exit 0 "history --help" -- "$KILN" history --help
expect_exit 0 "diff --help" -- "$KILN" diff --help

"$KILN" diff "$R1" "$TMP/r3" --history "$DB" > "$TMP/d.out" 2> "$TMP/d.err" \
  && grep -q "^$HOST .*mpi.all_reduce *busbw" "$TMP/d.out" && pass "kiln diff: run id against run dir" \
  || bad "diff: $(cat "$TMP/d.out" "$TMP/d.err")"
expect_exit 2 "diff of an unknown run" -- "$KILN" diff nope "$R1" --history "$DB"

"$KILN" history import "$TMP/r2" --history "$DB" > /dev/null && "$KILN" history import "$TMP/r2" --history "$DB" > /dev/null
[ "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from runs").fetchone()[0])' "$DB")" = 3 ] \
  && pass "import twice: still 3 runs" || bad "import is not idempotent"

# The regression path: earlier figures 100x higher, so this run's busbw fell by 99%.
cp "$DB" "$TMP/high.sqlite"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("update results set value=value*100"); c.commit()' "$TMP/high.sqlite"
"$KILN" run "${PLAN[@]}" --history "$TMP/high.sqlite" --out "$TMP/r4" -q > "$TMP/r4.out" 2> "$TMP/r4.err"
rc=$?
[ "$rc" -eq 1 ] && pass "run against the raised history: exit 1" || bad "run 4: exit $rc; $(tail -3 "$TMP/r4.err")"
json "$TMP/r4/report.json" '[f for f in d["findings"] if f["code"] == "node.regressed" and f["entity"]["id"] == "'"$HOST"'" and f["severity"] == "warning" and f["evidence"][0]["runs"] >= 2]' \
  | grep -q "mpi.all_reduce" && pass "node.regressed names $HOST with its evidence" || bad "no node.regressed: $(json "$TMP/r4/report.json" 'd["findings"]')"
"$KILN" run "${PLAN[@]}" --no-history --out "$TMP/r5" -q > /dev/null 2>&1
[ "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from runs").fetchone()[0])' "$DB")" = 3 ] \
  && pass "--no-history records nothing" || bad "--no-history recorded a run"
finish
