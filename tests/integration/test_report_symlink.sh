#!/usr/bin/env bash
# A symlink planted at RUN_DIR/report.json.tmp, pointing at another file: neither the campaign
# nor kiln report writes through it; the other file is untouched and report.json is a plain file.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/store_lib.sh"
OUT="$TMP/run"
echo "precious" > "$TMP/victim"
"$KILN" run --launcher local --ranks 2 --out "$OUT" --localize-by off --tests "$(long_plan 3)" \
  --params "$LONG_PARAMS" > "$TMP/run.out" 2> "$TMP/run.err" &
pid=$!
wait_for "$TMP/run.err" "round 2: mpi" 60 || bad "the campaign never reached round 2"
ln -s "$TMP/victim" "$OUT/report.json.tmp" && pass "planted report.json.tmp -> $TMP/victim mid-campaign"
wait $pid
rc=$?
[ $rc -eq 0 ] && pass "campaign exit 0" || { bad "campaign exit $rc"; cat "$TMP/run.err"; }
[ "$(cat "$TMP/victim")" = precious ] && pass "the campaign did not write through the link" || bad "victim now: $(head -c 200 "$TMP/victim")"
[ -f "$OUT/report.json" ] && [ ! -L "$OUT/report.json" ] && json "$OUT/report.json" 'd["verdict"]' | grep -q pass \
  && pass "report.json is a plain file with the report" || bad "report.json: $(ls -l "$OUT/report.json")"
[ -e "$OUT/report.json.tmp" ] || [ -L "$OUT/report.json.tmp" ] && bad "report.json.tmp left behind" || pass "no report.json.tmp left"

ln -s "$TMP/victim" "$OUT/report.json.tmp"
expect_exit 0 "kiln report with a planted link" -- "$KILN" report "$OUT"
[ "$(cat "$TMP/victim")" = precious ] && pass "kiln report did not write through the link" || bad "victim now: $(head -c 200 "$TMP/victim")"
[ ! -L "$OUT/report.json.tmp" ] && pass "kiln report removed the link, not its target" || bad "link still there"
finish
