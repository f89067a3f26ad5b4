#!/usr/bin/env bash
# What a run directory exposes: the directory is created exclusively with mode 0700 (its parent
# may exist, it may not), and every file kiln writes in it is 0600.
source "$(dirname "$0")/lib.sh"
mkdir -p "$TMP/kiln-runs"
chmod 0755 "$TMP/kiln-runs"
OUT="$TMP/kiln-runs/r1"
(umask 022; "$KILN" run --launcher local --ranks 2 --out "$OUT" --quiet --tests host.inventory > "$TMP/run.out" 2> "$TMP/run.err")
rc=$?
[ $rc -eq 0 ] && pass "campaign exit 0 (umask 022)" || { bad "campaign exit $rc"; cat "$TMP/run.err"; }
mode() { stat -c %a "$1" 2>/dev/null || echo missing; }
[ "$(mode "$OUT")" = 700 ] && pass "run directory 0700" || bad "run directory $(mode "$OUT")"
for f in results.jsonl report.json campaign.json secret journal.jsonl workers.log; do
  [ "$(mode "$OUT/$f")" = 600 ] && pass "$f 0600" || bad "$f $(mode "$OUT/$f")"
done
[ "$(mode "$TMP/kiln-runs")" = 755 ] && pass "the parent is left as it was" || bad "parent $(mode "$TMP/kiln-runs")"
expect_exit 2 "a second campaign into the same directory" -- "$KILN" run --launcher local --ranks 1 --out "$OUT" --tests host.inventory
echo "$ERR" | grep -q "already holds a campaign" && pass "refused: already holds a campaign" || bad "message: $ERR"
mkdir "$TMP/kiln-runs/empty"
expect_exit 2 "an existing (empty) directory" -- "$KILN" run --launcher local --ranks 1 --out "$TMP/kiln-runs/empty" --tests host.inventory
echo "$ERR" | grep -q "already exists" && pass "refused: the run directory must be new" || bad "message: $ERR"
[ -z "$(ls -A "$TMP/kiln-runs/empty")" ] && pass "nothing written into it" || bad "wrote into an existing directory"
finish
