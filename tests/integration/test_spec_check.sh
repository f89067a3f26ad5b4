#!/usr/bin/env bash
# kiln spec check: a good spec is one "FILE: ok (...)" line on stdout and exit 0; a bad one is one
# FILE:LINE:COL line per problem on stderr, nothing on stdout, and exit 2. Needs only kiln.
source "$(dirname "$0")/lib.sh"
: "${KILN_SRC:?KILN_SRC must point at the source tree}"

# run_spec ARGS...: runs kiln spec, keeps stdout in $OUT, stderr in $ERR and the exit code in $RC.
run_spec() {
  "$KILN" spec "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
}

for name in hgx-h100-8gpu:5 hgx-h200-8gpu:9; do
  file="$KILN_SRC/profiles/${name%%:*}.toml"
  run_spec check "$file"
  want="$file: ok (1 class, ${name##*:} figures)"
  [ "$RC" -eq 0 ] && [ "$OUT" = "$want" ] && [ -z "$ERR" ] && pass "${name%%:*} is ok" ||
    bad "${name%%:*}: exit $RC, stdout '$OUT', stderr '$ERR'"
done

# The complete example of docs/spec.md is a good spec, with what the document says it prints.
awk '/^```toml$/ {on = 1; next} on && /^```$/ {exit} on' "$KILN_SRC/docs/spec.md" >"$TMP/example.toml"
run_spec check "$TMP/example.toml"
said=$(grep -o 'prints `example.toml: ok ([^`]*)`' "$KILN_SRC/docs/spec.md" | sed 's/^prints `example.toml//; s/`$//')
[ "$RC" -eq 0 ] && [ -n "$said" ] && [ "$OUT" = "$TMP/example.toml$said" ] && pass "the example of docs/spec.md is ok" ||
  bad "docs/spec.md example: exit $RC, stdout '$OUT', stderr '$ERR', the document says '$said'"

cat >"$TMP/bad.toml" <<'TOML'
[[class]]
name = "gpu"
partition = "gpu"

[class.hardware]
gpus_per_node = -8
gpu_modle = "H200"

[class.figures."gpu.burn"]
tflops = { value = 600, tolerance = 1.5, source = "" }
TOML
run_spec check "$TMP/bad.toml"
want="$TMP/bad.toml:6:17: gpus_per_node must not be negative (got -8)
$TMP/bad.toml:7:1: unknown key \"gpu_modle\" in [class.hardware] (known: gpu_model, gpus_per_node, gpu_memory_gib, nvlinks_per_gpu, pcie_gen, pcie_width, hcas_per_node, hca_rate_gbps)
$TMP/bad.toml:10:37: tolerance must be a fraction between 0 and 1, exclusive, such as 0.10 (got 1.5)
$TMP/bad.toml:10:51: source must not be empty"
[ "$RC" -eq 2 ] && pass "a bad spec exits 2" || bad "a bad spec: exit $RC"
[ "$ERR" = "$want" ] && pass "one FILE:LINE:COL line per problem" || bad "bad spec stderr:
$ERR
want:
$want"
[ -z "$OUT" ] && pass "a bad spec prints nothing on stdout" || bad "bad spec stdout: $OUT"

printf '[[class]]\nname = "a\n' >"$TMP/syntax.toml"
run_spec check "$TMP/syntax.toml"
[ "$RC" -eq 2 ] && [ "$(echo "$ERR" | wc -l)" -eq 1 ] && [[ "$ERR" == "$TMP/syntax.toml:2:"* ]] &&
  pass "a TOML syntax error is one FILE:LINE:COL line" || bad "syntax error: exit $RC, stderr '$ERR'"

run_spec check "$KILN_SRC/profiles/hgx-h200-8gpu.toml" "$TMP/bad.toml"
[ "$RC" -eq 2 ] && [[ "$OUT" == *"hgx-h200-8gpu.toml: ok"* ]] && [ "$(echo "$ERR" | wc -l)" -eq 4 ] &&
  pass "a good and a bad file: the good one ok, exit 2" || bad "two files: exit $RC, stdout '$OUT'"

run_spec check "$TMP/missing.toml"
[ "$RC" -eq 2 ] && [ "$ERR" = "$TMP/missing.toml: cannot read (No such file or directory)" ] &&
  pass "a missing file is one line" || bad "missing file: exit $RC, stderr '$ERR'"

run_spec check
[ "$RC" -eq 2 ] && [ "$(echo "$ERR" | wc -l)" -eq 1 ] && pass "no FILE: exit 2, one line" || bad "no FILE: exit $RC '$ERR'"
run_spec frob
[ "$RC" -eq 2 ] && pass "an unknown spec command exits 2" || bad "kiln spec frob: exit $RC"
run_spec --help
[ "$RC" -eq 0 ] && [[ "$OUT" == *"kiln spec check FILE"* ]] && pass "kiln spec --help" || bad "--help: exit $RC"
"$KILN" --help | grep -q "^  spec " && pass "kiln --help lists spec" || bad "kiln --help does not list spec"

finish
