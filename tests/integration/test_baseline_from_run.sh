#!/usr/bin/env bash
# kiln spec from-run (needs the worker, hence not test_spec_*): a spec written from a known-good local run validates, holds the run's figures
# with their source, and bad requests are one line and exit 2.
source "$(dirname "$0")/lib.sh"
out="$TMP/run"
"$KILN" run --launcher local --ranks 2 --out "$out" --tests host.inventory,mpi.all_reduce --localize-by off --quiet \
  > /dev/null 2>&1 || bad "the baseline run failed"
"$KILN" spec from-run "$out" --out "$TMP/base.toml" --tolerance 0.2 --name cpu 2> "$TMP/err" \
  && pass "from-run exit 0" || bad "from-run: $(cat "$TMP/err")"
grep -q "wrote $TMP/base.toml ([0-9]* figures\?)" "$TMP/err" && pass "it says what it wrote" || bad "$(cat "$TMP/err")"
"$KILN" spec check "$TMP/base.toml" | grep -q ": ok (1 class, [1-9][0-9]* figures\?)" && pass "the spec validates" \
  || bad "kiln spec check: $("$KILN" spec check "$TMP/base.toml" 2>&1)"
python3 - "$TMP/base.toml" "$out" <<'PY' && pass "figures are the run's medians, intra-node, with tolerance and source" || bad "content"
import json, statistics, sys, tomllib
spec = tomllib.load(open(sys.argv[1], "rb"))
cls = spec["class"][0]
assert cls["name"] == "cpu" and "hosts" in cls
fig = cls["figures"]["mpi.all_reduce"]["intra"]["busbw"]
rows = [json.loads(l) for l in open(sys.argv[2] + "/results.jsonl")]
at = [r["value"] for r in rows if r.get("test") == "mpi.all_reduce" and r.get("metric") == "busbw" and r.get("size_bytes") == 64 << 20]
one = fig["64MiB"]
assert abs(one["value"] - statistics.median(at)) <= 0.001 * one["value"] + 1e-3, (one, at)
assert one["tolerance"] == 0.2 and one["ranks"] == 2 and "from-run" in one["source"]
assert list(fig) == ["64MiB"], list(fig)  # sizes from 64 MiB up (the local sweep ends there)
PY
for args in "" "$TMP/nowhere" "$out --tolerance 1.5" "$out --bogus"; do
  "$KILN" spec from-run $args > "$TMP/o" 2> "$TMP/e"
  rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l < "$TMP/e")" -eq 1 ] && pass "from-run $args: exit 2, one line" || bad "from-run $args: exit $rc: $(cat "$TMP/e")"
done
finish
