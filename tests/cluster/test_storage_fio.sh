#!/usr/bin/env bash
# storage.fio on the 6 testbed nodes, each in its own directory (<path>/kiln-fio-<host>-<pid>) on
# one ext4 file system on a loop device. The six nodes share that device and two CPU cores, where a
# fleet has a disk per node: left alone, each node's figure is its share of the contention (CI saw
# 0.96-1.94 GB/s among six equal nodes, a false fleet.outlier). So each node gets its own "disk
# model": its slurmd (and so its job steps) is put in a cgroup of its own capping that device
# (io.max, or blkio.throttle on cgroup v1: tests/integration/throttle_lib.sh; a cap is per cgroup,
# shared by its processes), 50 MiB/s and 1,500 read IOPS for five nodes, 20 MiB/s and 500 IOPS for
# node3, caps far under what the shared device gives each node under contention. The fleet
# comparison must name node3 alone (fleet.outlier on storage.fio), and with node3 given the others'
# cap the same campaign has no finding.
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
at_exit 'restore_nodes; in_nodes umount "$THROTTLE_MNT"; teardown_throttled_dir; [ -n "${KILN_KEEP_TMP:-}" ] || rm -rf "$TMP"'
restore_nodes() { local p; [ -n "$home_cg" ] && for p in $node_pids; do echo "$p" > "$home_cg/cgroup.procs" 2>/dev/null; done; home_cg=""; }
setup_throttled_dir "$TMP/thr" 20971520 500 || { echo "SKIP: $THROTTLE_WHY"; exit 77; }
chmod 1777 "$THROTTLE_MNT"
in_nodes mount "$THROTTLE_LOOP" "$THROTTLE_MNT"
for p in $node_pids; do
  [ "$(nsenter -t "$p" -m findmnt -no SOURCE "$THROTTLE_MNT")" = "$THROTTLE_LOOP" ] \
    || { echo "SKIP: cannot mount $THROTTLE_LOOP in the nodes' mount namespaces"; exit 77; }
done
home_cg=$(dirname "$THROTTLE_CG")
CAP_BPS=52428800 CAP_IOPS=1500  # each node's "disk" but node3's (50 MiB/s)
for p in $node_pids; do
  throttle_cgroup "kiln-it-$$-$p" $CAP_BPS $CAP_IOPS || { echo "SKIP: $THROTTLE_WHY"; exit 77; }
  [ "$p" = "$pid" ] && { own_cg=$THROTTLE_NEW_CG; to=$THROTTLE_CG; } || to=$THROTTLE_NEW_CG
  echo "$p" > "$to/cgroup.procs" || { echo "SKIP: cannot move slurmd $p into $to"; exit 77; }
done
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
echo "$pid" > "$own_cg/cgroup.procs" || bad "cannot move node3's slurmd to the others' cap"
wait_idle
OUT="$TMP/again"
"$KILN" run --partition debug --nodes 6 --out "$OUT" --tests storage.fio --params "$PARAMS" --localize-by off \
  > "$TMP/summary2.txt" 2> "$TMP/stderr2.txt"
rc=$?
[ $rc -eq 0 ] && pass "node3 at the others' cap: no finding (exit 0)" || { bad "exit $rc with equal caps"; cat "$TMP/summary2.txt"; }
# The premise: the caps, not the contention, set the figures.
python3 - $CAP_BPS $CAP_IOPS "$TMP/run" "$TMP/again" <<'PY' && pass "the caps set the figures" || bad "a figure above its cap"
import json, sys
bps, iops = float(sys.argv[1]), float(sys.argv[2])
cap = {"local_seq_read": bps / 1e9, "local_seq_write": bps / 1e9, "local_rand_read": iops / 1e3}  # GB/s, kIOPS
for run in sys.argv[3:]:
    rows = [json.loads(l) for l in open(run + "/results.jsonl") if l.startswith("{")]
    got = {}
    for r in rows:
        if r.get("record") == "result" and r.get("metric") in cap and r.get("status") == "pass":
            got.setdefault(r["metric"], {})[r["host"]] = r["value"]
    for m, by in sorted(got.items()):
        print(run.rsplit("/", 1)[1], m, " ".join(f"{h} {v:.3g}" for h, v in sorted(by.items())))
        assert len(by) == 6 and max(by.values()) <= cap[m] * 1.15, (m, by)
PY
no_workers_left
finish
