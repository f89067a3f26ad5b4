#!/usr/bin/env bash
# cmake --install into a temporary prefix lays out bin/, share/kiln/jobs/, share/kiln/profiles/,
# share/kiln/schemas/ and share/doc/kiln/; the installed kiln names the installed sbatch template
# as its default, and a campaign run from the prefix (its own kiln-worker, found next to it) passes
# and matches the installed schemas.
source "$(dirname "$0")/lib.sh"
BUILD=$(cd "$KILN_BIN/.." && pwd)
PREFIX="$TMP/prefix"
cmake --install "$BUILD" --prefix "$PREFIX" > "$TMP/install.log" 2>&1 || { bad "cmake --install failed"; cat "$TMP/install.log"; finish; }
missing=""
for f in bin/kiln bin/kiln-worker share/kiln/jobs/burnin.sbatch.in share/kiln/jobs/health.sbatch.in \
         share/kiln/jobs/kiln-user-job.sh share/kiln/jobs/fsdp_example.py \
         share/kiln/profiles/hgx-h200-8gpu.toml share/kiln/schemas/report.schema.json \
         share/kiln/schemas/result.schema.json share/doc/kiln/README.md share/doc/kiln/operator-guide.md; do
  [ -e "$PREFIX/$f" ] || missing+=" $f"
done
[ -z "$missing" ] && pass "the prefix holds bin/, share/kiln/{jobs,profiles,schemas} and share/doc/kiln" || bad "missing:$missing"
[ -x "$PREFIX/bin/kiln" ] && [ -x "$PREFIX/bin/kiln-worker" ] && pass "both programs are executable" || bad "not executable"
"$PREFIX/bin/kiln" run --help | tr -d ' \n' | grep -qF "(default:$PREFIX/share/kiln/jobs/burnin.sbatch.in" \
  && pass "the installed kiln's default sbatch template is the installed one" \
  || { bad "default template"; "$PREFIX/bin/kiln" run --help | grep -A3 job-template; }
"$PREFIX/bin/kiln" spec check "$PREFIX/share/kiln/profiles/hgx-h200-8gpu.toml" > /dev/null 2>&1 \
  && pass "the installed profile checks" || bad "kiln spec check on the installed profile"
OUT="$TMP/run"
(cd "$TMP" && "$PREFIX/bin/kiln" run --launcher local --ranks 2 --out "$OUT" --quiet --tests host.inventory,mpi.all_reduce \
  --params '{"mpi.all_reduce":{"max_bytes":65536}}' > "$TMP/summary.txt" 2> "$TMP/stderr.txt")
rc=$?
worker=$(json "$OUT/campaign.json" 'd["config"].get("worker", "")' 2>/dev/null)
[ $rc -eq 0 ] && [ "$(json "$OUT/report.json" 'd["verdict"]')" = "pass" ] && pass "a campaign from the prefix: exit 0, verdict pass" \
  || { bad "campaign from the prefix: exit $rc"; cat "$TMP/summary.txt" "$TMP/stderr.txt"; }
out=$(KILN_SCHEMA_DIR="$PREFIX/share/kiln/schemas" python3 "$VALIDATE_RUN" "$OUT")
case $? in 0) pass "its run directory matches the installed schemas" ;; 77) echo "$out" ;; *) bad "installed schemas: $out" ;; esac
[ "$worker" = "$PREFIX/bin/kiln-worker" ] && pass "it ran the prefix's kiln-worker" || bad "worker: '$worker'"
finish
