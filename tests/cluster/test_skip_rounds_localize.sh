#!/usr/bin/env bash
# On the testbed (no GPU, no HCA) rounds of NCCL and RDMA tests report SKIP with reasons, the
# campaign completes, and the MPI rounds still localize a slow node.
source "$(dirname "$0")/localize_lib.sh"
need_testbed 6
at_exit clear_faults
clear_faults
"$TESTBED" fault slow node2 100mbit || { echo "SKIP: cannot shape node2"; exit 77; }
OUT="$TMP/mixed"
TESTS=nccl.all_reduce,nccl.alltoall,nccl.sendrecv,rdma.write_bw,rdma.read_bw,rdma.send_lat,ib.ports,gpu.health
"$KILN" run --partition debug --nodes "$TESTBED_NODES" --out "$OUT" "${LOCALIZE_ARGS[@]}" --tests "$TESTS" \
  > "$OUT.summary" 2> "$OUT.stderr"
RC=$?
F=$(findings "$OUT")
echo "exit $RC; findings:"; echo "$F"
[ $RC -eq 1 ] && pass "campaign completed with findings (exit 1)" || { bad "exit $RC"; show_run "$OUT"; }
[ "$F" = "node.slow node node2" ] && pass "the MPI rounds still localize node2" || { bad "findings: $F"; show_run "$OUT"; }
python3 - "$OUT" "$TESTS" <<'PY' && pass "NCCL/RDMA/GPU tests SKIP with reasons on every node" || bad "SKIP contract"
import json, sys
out, tests = sys.argv[1], sys.argv[2].split(",")
rows = [json.loads(l) for l in open(out + "/results.jsonl")]
for t in tests:
    st = [r for r in rows if r["test"] == t and r["record"] == "end"]
    assert st, t
    assert all(r["status"] == "skip" and r.get("reason") for r in st), (t, st[:1])
    assert len({r["host"] for r in st}) == 6, (t, {r["host"] for r in st})
PY
clear_faults
finish
