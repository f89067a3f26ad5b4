#!/usr/bin/env bash
# A clean testbed: no findings in 5 runs in a row. The last one runs with a spec that gives
# localization its reference (docs/localization.md, "The reference from the spec"): an inter-node
# mpi.alltoall busbw at the localization's 4 MiB that every node reaches, so the run stays clean and
# the report names the figure.
source "$(dirname "$0")/localize_lib.sh"
need_testbed 6
at_exit clear_faults
clear_faults
reference_spec "$TMP/ref.toml" 0.0001 "below any healthy testbed pair"
for i in 1 2 3 4 5; do
  OUT="$TMP/clean$i"
  start=$SECONDS
  spec=()
  [ $i -eq 5 ] && spec=(--spec "$TMP/ref.toml")
  run_localize "$OUT" "${spec[@]}"
  F=$(findings "$OUT")
  echo "run $i: exit $RC in $((SECONDS - start)) s, rounds $(json "$OUT/report.json" 'd["localization"]["rounds"]'), findings: ${F:-none}"
  if [ $RC -eq 0 ] && [ -z "$F" ]; then pass "clean run $i: no findings"; else bad "clean run $i: exit $RC, findings: $F"; show_run "$OUT"; fi
done
python3 - "$TMP/clean5" <<'PY' && pass "with the spec: localization's reference is the inter figure" || bad "reference: $(json "$TMP/clean5/report.json" 'd["localization"].get("reference")')"
import json, sys
ref = json.load(open(sys.argv[1] + "/report.json"))["localization"]["reference"]
assert ref["value"] == 0.0001 and ref["scope"] == "inter" and "class testbed" in ref["source"], ref
PY
python3 - "$TMP/clean4" <<'PY' && pass "without one: no reference" || bad "a reference without a spec"
import json, sys
assert "reference" not in json.load(open(sys.argv[1] + "/report.json"))["localization"]
PY
finish
