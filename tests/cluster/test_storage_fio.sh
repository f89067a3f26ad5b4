#!/usr/bin/env bash
# storage.fio on the 6 testbed nodes, each in its own directory (<path>/kiln-fio-<host>-<pid>) on
# one ext4 file system on a loop device; node3's slurmd (and so its job steps) is put in a cgroup
# that throttles that device (io.max, or blkio.throttle on cgroup v1: tests/integration/
# throttle_lib.sh). The fleet comparison must name node3 alone (fleet.outlier on storage.fio), and
# with the throttle lifted the same campaign has no finding.
# Each slurmd runs in a mount namespace of its own (ip netns exec), so a file system mounted after
# the testbed came up is not seen there: the test mounts it in every node's namespace too.
source "$(dirname "$0")/slurm_lib.sh"
source "$(dirname "$0")/../integration/throttle_lib.sh"
need_testbed 6
command -v fio >/dev/null || { echo "SKIP: fio not on PATH"; exit 77; }
pid=$(pgrep -f "slurmd -D -N node3 " | head -1)
[ -n "$pid" ] || { echo "SKIP: no slurmd for node3"; exit 77; }
home_cg=""
node_pids=$(pgrep -f "slurmd -D -N node[0-9]+ ")
in_nodes() { local p; for p in $node_pids; do nsenter -t "$p" -m "$@" 2>/dev/null; done; }
at_exit 'restore_node3; in_nodes umount "$THROTTLE_MNT"; teardown_throttled_dir; [ -n "${KILN_KEEP_TMP:-}" ] || rm -rf "$TMP"'
restore_node3() { [ -n "$home_cg" ] && echo "$pid" > "$home_cg/cgroup.procs" 2>/dev/null; home_cg=""; }
setup_throttled_dir "$TMP/thr" 20971520 500 || { echo "SKIP: $THROTTLE_WHY"; exit 77; }
chmod 1777 "$THROTTLE_MNT"
in_nodes mount "$THROTTLE_LOOP" "$THROTTLE_MNT"
for p in $node_pids; do
  [ "$(nsenter -t "$p" -m findmnt -no SOURCE "$THROTTLE_MNT")" = "$THROTTLE_LOOP" ] \
    || { echo "SKIP: cannot mount $THROTTLE_LOOP in the nodes' mount namespaces"; exit 77; }
done
home_cg=$(dirname "$(dirname "$THROTTLE_PROCS")")
echo "$pid" > "$THROTTLE_PROCS" || { echo "SKIP: cannot move node3's slurmd into the throttle cgroup"; exit 77; }
PARAMS="{\"storage.fio\":{\"local_path\":\"$THROTTLE_MNT\",\"size\":\"32M\",\"runtime_s\":2}}"
OUT="$TMP/run"
"$KILN" run --partition debug --nodes 6 --out "$OUT" --tests storage.fio --params "$PARAMS" --localize-by off \
  > "$TMP/summary.txt" 2> "$TMP/stderr.txt"
rc=$?
[ $rc -eq 1 ] && pass "campaign exit 1 (a finding)" || { bad "campaign exit $rc"; cat "$TMP/summary.txt" "$TMP/stderr.txt"; }
python3 - "$OUT" <<'PY' && pass "fleet.outlier on storage.fio names node3 alone" || bad "findings"
import json, sys
rep = json.load(open(sys.argv[1] + "/report.json"))
found = {(f["code"], f["entity"]["id"]) for f in rep["findings"]}
print(sorted(found))
assert found == {("fleet.outlier", "node3")}, found
ev = [e for f in rep["findings"] for e in f.get("evidence", [])]
assert any(e.get("check") == "storage.fio" for e in ev), ev
PY
[ -z "$(ls -A "$THROTTLE_MNT" | grep kiln-fio)" ] && pass "no per-node directory left" || bad "left: $(ls "$THROTTLE_MNT")"
restore_node3
wait_idle
OUT="$TMP/again"
"$KILN" run --partition debug --nodes 6 --out "$OUT" --tests storage.fio --params "$PARAMS" --localize-by off \
  > "$TMP/summary2.txt" 2> "$TMP/stderr2.txt"
rc=$?
[ $rc -eq 0 ] && pass "throttle lifted: no finding (exit 0)" || { bad "exit $rc unthrottled"; cat "$TMP/summary2.txt"; }
no_workers_left
finish
