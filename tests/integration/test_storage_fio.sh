#!/usr/bin/env bash
# storage.fio with real fio on this machine: figures > 0 and plausible on a local and a "shared"
# directory, the per-node directory removed afterwards, SKIP with a reason for a missing path,
# buffered I/O with a note on tmpfs, a clear ERROR on a full disk, and a THROTTLED directory: an
# ext4 file system on a loop device whose reads and writes a cgroup caps (v2 io.max where the io
# controller is on cgroup v2, else v1 blkio.throttle) reads well below the same device unthrottled.
source "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || { echo "SKIP: fio not on PATH"; exit 77; }

# run_fio OUT PARAMS [cgroup-procs-file]: kiln-worker --standalone, optionally inside a cgroup.
run_fio() {
  local out=$1 params=$2 procs=${3:-}
  if [ -n "$procs" ]; then
    sh -c 'echo $$ > "$1"; shift; exec "$@"' sh "$procs" mpirun -np 1 "$WORKER" --standalone --deadline 120 \
      --tests storage.fio --params "$params" > "$out" 2> "$out.err"
  else
    mpirun -np 1 "$WORKER" --standalone --deadline 120 --tests storage.fio --params "$params" > "$out" 2> "$out.err"
  fi
}
# figure FILE METRIC: the value of one result, or "none".
figure() {
  python3 - "$1" "$2" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
v = [r["value"] for r in rows if r.get("record") == "result" and r.get("metric") == sys.argv[2] and r["status"] == "pass"]
print(v[0] if v else "none")
PY
}

mkdir -p "$TMP/local" "$TMP/shared"
run_fio "$TMP/both.jsonl" "{\"local_path\":\"$TMP/local\",\"shared_path\":\"$TMP/shared\",\"size\":\"64M\",\"runtime_s\":2}"
python3 - "$TMP/both.jsonl" <<'PY' && pass "6 figures > 0 and plausible, with latency percentiles" || { bad "figures"; cat "$TMP/both.jsonl.err"; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
res = {r["metric"]: r for r in rows if r["record"] == "result"}
for role in ("local", "shared"):
    for m, hi in (("seq_read", 100), ("seq_write", 100), ("rand_read", 10000)):
        r = res[f"{role}_{m}"]
        assert r["status"] == "pass" and 0 < r["value"] < hi, r
        assert r["entity"]["kind"] == "node", r
        print(f"  {role}_{m} = {r['value']:.3f} {r['unit']} ({r['extra']['ioengine']}, direct={r['extra']['direct']})")
    assert res[f"{role}_rand_read"]["extra"]["clat_us"]["rand_read"]["p99"] > 0
ends = [r for r in rows if r["record"] == "end"]
assert len(ends) == 1 and ends[0]["status"] == "pass", ends
PY
left=$(find "$TMP/local" "$TMP/shared" -mindepth 1 | wc -l)
[ "$left" -eq 0 ] && pass "the per-node directories are removed" || bad "$left files left behind"

run_fio "$TMP/missing.jsonl" "{\"local_path\":\"$TMP/nowhere\"}"
grep -q '"status":"skip".*is missing' "$TMP/missing.jsonl" && pass "a missing path is SKIP with its reason" \
  || { bad "missing path"; cat "$TMP/missing.jsonl"; }

if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  mkdir -p "/dev/shm/kiln-it-$$"
  run_fio "$TMP/shm.jsonl" "{\"local_path\":\"/dev/shm/kiln-it-$$\",\"size\":\"16M\",\"runtime_s\":1}"
  grep -q '"direct":false' "$TMP/shm.jsonl" && grep -q 'O_DIRECT refused' "$TMP/shm.jsonl" \
    && pass "tmpfs: buffered I/O, with the note" || { bad "tmpfs fallback"; cat "$TMP/shm.jsonl" "$TMP/shm.jsonl.err"; }
  rm -rf "/dev/shm/kiln-it-$$"
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP (part): disk-full and throttled directories need root (mount, losetup, cgroups)"
  finish
fi

mkdir -p "$TMP/full" && mount -t tmpfs -o size=8m tmpfs "$TMP/full" && {
  run_fio "$TMP/full.jsonl" "{\"local_path\":\"$TMP/full\",\"size\":\"64M\",\"runtime_s\":1}"
  grep -q '"status":"error".*disk full' "$TMP/full.jsonl" && pass "a full disk is ERROR saying so" \
    || { bad "disk full"; cat "$TMP/full.jsonl"; }
  [ -z "$(ls -A "$TMP/full")" ] && pass "the directory is cleaned after a full disk" || bad "left: $(ls -A "$TMP/full")"
  umount "$TMP/full"
}

source "$(dirname "$0")/throttle_lib.sh"
trap 'teardown_throttled_dir; [ -n "${KILN_KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
if ! setup_throttled_dir "$TMP/thr" 20971520 500; then
  echo "SKIP (part): throttled directory: $THROTTLE_WHY"
  finish
fi
p="{\"local_path\":\"$TMP/thr/mnt\",\"size\":\"32M\",\"runtime_s\":2}"
run_fio "$TMP/free.jsonl" "$p"
run_fio "$TMP/thr.jsonl" "$p" "$THROTTLE_PROCS"
free=$(figure "$TMP/free.jsonl" local_seq_read)
thr=$(figure "$TMP/thr.jsonl" local_seq_read)
free_r=$(figure "$TMP/free.jsonl" local_rand_read)
thr_r=$(figure "$TMP/thr.jsonl" local_rand_read)
echo "  loop device ($THROTTLE_KIND): seq_read $free GB/s unthrottled, $thr GB/s throttled to 20 MiB/s;" \
  "rand_read $free_r kIOPS, $thr_r kIOPS throttled to 500 IOPS"
python3 -c "import sys; f,t=float(sys.argv[1]),float(sys.argv[2]); print(f'  ratio {t/f:.4f}'); sys.exit(0 if 0 < t < 0.03 and t < f/5 else 1)" "$free" "$thr" \
  && pass "the throttled directory reads well below the unthrottled one" || bad "throttle not seen: $free vs $thr"
python3 -c "import sys; sys.exit(0 if 0 < float(sys.argv[2]) < 0.7 < float(sys.argv[1]) else 1)" "$free_r" "$thr_r" \
  && pass "throttled random reads near the 500 IOPS cap" || bad "rand_read throttle not seen: $free_r vs $thr_r"
finish
