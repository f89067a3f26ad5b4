#!/usr/bin/env bash
# A disk that fills mid-campaign (a small tmpfs as the run directory, filled by dd): kiln stops
# the rounds, tells the workers, writes report.json with verdict error and the reason (or says on
# stderr that it could not), exits 2, and results.jsonl holds no torn line. Once there is room,
# kiln report rebuilds the report and kiln resume finishes the campaign.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/store_lib.sh"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: mounting a small tmpfs needs root"; exit 77; fi
MNT="$TMP/mnt"
mkdir -p "$MNT"
if ! mount -t tmpfs -o size=16m,mode=0755 kiln-full-disk "$MNT"; then echo "SKIP: cannot mount a tmpfs here"; exit 77; fi
at_exit 'umount "$MNT" 2>/dev/null'
OUT="$MNT/run"
KILN_LOG_LEVEL=debug "$KILN" run --launcher local --ranks 2 --out "$OUT" --localize-by off \
  --tests "$(long_plan 8)" --params "$LONG_PARAMS" > "$TMP/run.out" 2> "$TMP/run.err" &
pid=$!
if ! wait_for "$TMP/run.err" "round 3: mpi" 120; then
  bad "the campaign never reached round 3"; cat "$TMP/run.err"; kill $pid; finish
fi
dd if=/dev/zero of="$MNT/fill" bs=64k 2>/dev/null
pass "filled the disk: $(df --output=avail -B1 "$MNT" | tail -1) bytes left"
start=$(date +%s.%N)
wait $pid
rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
acked=$(acked "$TMP/run.err")
lines=$(wc -l < "$OUT/results.jsonl")
echo "figures: kiln stopped $secs s after the disk filled; $acked records acknowledged, $lines lines in results.jsonl"
[ $rc -eq 2 ] && pass "exit 2" || { bad "exit $rc, want 2"; cat "$TMP/run.err"; }
grep -q "No space left on device" "$TMP/run.err" && pass "stderr names the storage error" || bad "stderr: $(tail -3 "$TMP/run.err")"
lines_parse "$OUT/results.jsonl" && pass "no torn line: every line of results.jsonl parses" || bad "a torn line"
[ "$acked" -gt 0 ] && [ "$lines" -ge "$acked" ] && pass "every acknowledged record is in the file" || bad "acknowledged $acked, $lines lines"
if [ -f "$OUT/report.json" ]; then
  python3 - "$OUT" <<'PY' && pass "report.json: verdict error with the reason" || bad "report content"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
assert rep["verdict"] == "error" and "No space left on device" in rep["error"], rep.get("error")
PY
else
  grep -q "could not write .*report.json" "$TMP/run.err" && pass "no room even for the report, and stderr says so" \
    || bad "no report.json and no stderr line about it"
fi
[ -e "$MNT/run/.kiln-reserve" ] && bad "the reserve was not given back" || pass "the space set aside was given back"

rm -f "$MNT/fill"
expect_exit 2 "kiln report once there is room (the campaign is unfinished)" -- "$KILN" report "$OUT"
json "$OUT/report.json" 'd["verdict"] == "error" and "kiln resume" in d["error"]' | grep -q True \
  && pass "kiln report rebuilt report.json" || bad "rebuilt report: $(head -c 400 "$OUT/report.json")"
"$KILN" resume "$OUT" --quiet > "$TMP/resume.out" 2> "$TMP/resume.err"
rc=$?
[ $rc -eq 0 ] && pass "kiln resume finished the campaign (exit 0)" || { bad "kiln resume exit $rc"; cat "$TMP/resume.err"; }
lines_parse "$OUT/results.jsonl" && pass "every line parses after resume" || bad "a bad line after resume"
python3 - "$OUT" <<'PY' && pass "resumed report: pass, every record counted" || bad "resumed report content"
import json, sys
out = sys.argv[1]
rep = json.load(open(out + "/report.json"))
rows = [json.loads(l) for l in open(out + "/results.jsonl") if '"record":"result"' in l]
assert rep["verdict"] == "pass" and rep["sessions"] == 2, (rep["verdict"], rep.get("error"))
assert rep["results"]["total"] == len(rows)
assert sum(1 for r in rep["rounds"] if r["finished"]) == 9
PY
sleep 0.5
pgrep -f "$WORKER" >/dev/null && bad "kiln-worker processes left behind" || pass "no workers left behind"
finish
