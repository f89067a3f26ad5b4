#!/usr/bin/env bash
# The recorded runs under tests/data (testbed and GPU machine) against schemas/*.json: each
# results.jsonl as recorded, and each report.json as kiln report rebuilds it today (the recorded
# ones predate fields added since; the validator says which). The schema's finding codes are the
# catalog's, and the validator rejects what it must (a bad enum, a missing field, a wrong type,
# with FILE:LINE and the JSON path) and skips only a torn final line.
source "$(dirname "$0")/lib.sh"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
python3 -c "import jsonschema" 2>/dev/null || { echo "SKIP: python3-jsonschema is not installed"; exit 77; }
validate() { python3 "$VALIDATE_RUN" "$@"; }

runs=0
for d in "$SRC"/tests/data/runs/*/; do
  name=$(basename "$d")
  mkdir -p "$TMP/recorded" && cp -r "$d" "$TMP/recorded/$name"
  "$KILN" report "$TMP/recorded/$name" > /dev/null 2>&1
  [ -f "$TMP/recorded/$name/report.json" ] || bad "kiln report did not rebuild $name"
  runs=$((runs + 1))
done
[ "$runs" -gt 0 ] && pass "$runs recorded runs rebuilt" || bad "no recorded run under tests/data/runs"
out=$(validate --tree "$TMP/recorded") && pass "every rebuilt run is valid:"$'\n'"$out" || bad "rebuilt runs: $out"
old=$(validate --tree "$SRC/tests/data/runs" | grep -o 'runs/[^/]*/report.json' | sort -u | tr '\n' ' ')
[ -z "$old" ] || echo "note: recorded report.json of an older format (valid once rebuilt): $old"

# The schema's code enum is the findings catalog.
want=$("$KILN" catalog | awk '/^Findings/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^[A-Z]/ && !/^Findings/ {exit}' | sort)
have=$(python3 -c 'import json,sys; print("\n".join(sorted(json.load(open(sys.argv[1]))["$defs"]["code"]["enum"])))' \
  "$SRC/schemas/result.schema.json")
[ -n "$want" ] && [ "$want" = "$have" ] && pass "schema codes = catalog codes ($(echo "$want" | wc -l))" \
  || bad "schema codes differ from kiln catalog: $(diff <(echo "$want") <(echo "$have") | grep '^[<>]' | tr '\n' ' ')"

# What the validator must reject, and the torn line it must skip.
probe() {  # probe NAME PYTHON-EDIT: a copy of testbed-clean (rebuilt) edited, validated
  local dir="$TMP/probe-$1"
  cp -r "$TMP/recorded/testbed-clean" "$dir"
  python3 - "$dir" "$2" <<'PY'
import json, sys
d, edit = sys.argv[1], sys.argv[2]
rep = json.load(open(d + "/report.json"))
lines = open(d + "/results.jsonl").read().splitlines()
res = [json.loads(l) for l in lines]
exec(edit)
json.dump(rep, open(d + "/report.json", "w"))
open(d + "/results.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in res))
PY
  PROBE=$(validate "$dir")
  PROBE_RC=$?
}
probe verdict 'rep["verdict"] = "maybe"'
[ $PROBE_RC -eq 1 ] && grep -q 'report.json: \$.verdict' <<< "$PROBE" && pass "a bad verdict is rejected" || bad "bad verdict: rc $PROBE_RC: $PROBE"
probe status 'res[4]["status"] = "ok"'
[ $PROBE_RC -eq 1 ] && grep -q 'results.jsonl:5: \$.status' <<< "$PROBE" && pass "a bad status on line 5 is named" || bad "bad status: rc $PROBE_RC: $PROBE"
probe missing 'del res[0]["metric"]'
[ $PROBE_RC -eq 1 ] && grep -q "results.jsonl:1: \\$: 'metric' is a required" <<< "$PROBE" && pass "a missing field is named" || bad "missing: rc $PROBE_RC: $PROBE"
probe type 'rep["findings"].append(dict(code="node.slow", severity="error", entity=dict(kind="node", id="n"), summary="", next_step="", confidence="high", evidence=[]))'
[ $PROBE_RC -eq 1 ] && grep -q 'findings\[0\].confidence' <<< "$PROBE" && pass "a finding's wrong type is named" || bad "type: rc $PROBE_RC: $PROBE"
probe extra 'res[0]["colour"] = "blue"'
[ $PROBE_RC -eq 1 ] && grep -q "colour" <<< "$PROBE" && pass "an unknown field is rejected" || bad "unknown field: rc $PROBE_RC: $PROBE"
probe torn ''
printf '{"record":"result","test":"mpi.al' >> "$TMP/probe-torn/results.jsonl"
out=$(validate "$TMP/probe-torn")
[ $? -eq 0 ] && grep -q "torn final line" <<< "$out" && pass "a torn final line is skipped and said so" || bad "torn: $out"
printf '\n' >> "$TMP/probe-torn/results.jsonl"
validate "$TMP/probe-torn" > /dev/null && bad "a torn line followed by a newline passed" || pass "a broken whole line is an error"
schema_opt_out "$TMP"/probe-*  # corrupt on purpose: the exit check leaves them out
finish
