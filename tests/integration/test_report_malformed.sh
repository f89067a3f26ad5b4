#!/usr/bin/env bash
# Malformed values in results.jsonl (hand-edited): a problem code that is a number, a string where
# a number belongs, a line that is not JSON. kiln report still writes the report; each becomes a
# result.invalid finding instead of an error.
source "$(dirname "$0")/lib.sh"
OUT="$TMP/run"
"$KILN" run --launcher local --ranks 2 --out "$OUT" --quiet --localize-by off --tests host.inventory,mpi.all_reduce \
  --params '{"mpi.all_reduce":{"max_bytes":65536}}' > "$TMP/run.out" 2> "$TMP/run.err"
rc=$?
[ $rc -eq 0 ] && pass "campaign exit 0" || { bad "campaign exit $rc"; cat "$TMP/run.err"; }
python3 - "$OUT/results.jsonl" <<'PY'
import json, sys
path = sys.argv[1]
rows = [json.loads(l) for l in open(path)]
res = [i for i, r in enumerate(rows) if r["record"] == "result" and r["test"] == "mpi.all_reduce"]
a, b, c = res[0], res[1], res[2]
rows[a]["status"] = "fail"
rows[a]["problems"] = [{"code": 5}]                 # a code that is not a catalog name
rows[a]["extra"] = {"problems": [{"code": 5}]}
rows[b]["value"] = "fast"                           # a string where a number belongs
rows[c]["size_bytes"] = {"nested": [1, 2]}          # an object where a number belongs
with open(path, "w") as f:
    for r in rows:
        f.write(json.dumps(r, separators=(",", ":")) + "\n")
    f.write("this line is not JSON\n")
PY
schema_opt_out "$OUT"  # results.jsonl is malformed on purpose
rm -f "$OUT/report.json"
expect_exit 1 "kiln report on the hand-edited run (findings)" -- "$KILN" report "$OUT"
python3 - "$OUT" <<'PY' && pass "report written: result.invalid findings, unreadable lines counted" || bad "report content"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
assert rep["verdict"] == "fail", rep["verdict"]
invalid = [f for f in rep["findings"] if f["code"] == "result.invalid"]
assert len(invalid) >= 2, rep["findings"]
assert any("unknown finding code" in f["summary"] for f in invalid), invalid
assert any("could not be read" in f["summary"] for f in invalid), invalid
assert rep["results"]["unreadable_lines"] == 3, rep["results"]
PY
finish
