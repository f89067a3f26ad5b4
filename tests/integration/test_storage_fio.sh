#!/usr/bin/env bash
# storage.fio with real fio on this machine: figures > 0 and plausible on a local and a "shared"
# directory, the per-node directory removed afterwards, SKIP with a reason for a missing path,
# buffered I/O with a note where O_DIRECT is refused (ramfs), a clear ERROR on a full disk, and a THROTTLED directory: an
# ext4 file system on a loop device whose reads and writes a cgroup caps (v2 io.max where the io
# controller is on cgroup v2, else v1 blkio.throttle) reads well below the same device unthrottled.
source "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || { echo "SKIP: fio not on PATH"; exit 77; }

# run_fio OUT PARAMS [cgroup-procs-file]: kiln-worker --standalone, optionally inside a cgroup.
run_fio() {
  local out=$1 params=$2 procs=${3:-}
  if [ -n "$procs" ]; then
    sh -c 'echo $$ > "$1"; shift; exec "$@"' sh "$procs" mpirun -np 1 "$WORKER" --standalone --deadline 120 \
      --tests storage.fio --params "{\"storage.fio\":$params}" > "$out" 2> "$out.err"
  else
    mpirun -np 1 "$WORKER" --standalone --deadline 120 --tests storage.fio --params "{\"storage.fio\":$params}" > "$out" 2> "$out.err"
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

# has_result FILE METRIC STATUS REASON-PART [EXTRA-PART...]: a result with that metric and status,
# its reason containing REASON-PART and its extra (as JSON) each EXTRA-PART.
has_result() {
  python3 - "$@" <<'PY'
import json, sys
f, metric, status, why, *parts = sys.argv[1:]
rows = [json.loads(l) for l in open(f) if l.startswith("{")]
ok = [r for r in rows if r.get("record") == "result" and r["metric"] == metric and r["status"] == status
      and why in r.get("reason", "") and all(p in json.dumps(r.get("extra", {})) for p in parts)]
sys.exit(0 if ok else 1)
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
has_result "$TMP/missing.jsonl" local skip "is missing" && pass "a missing path is SKIP with its reason" \
  || { bad "missing path"; cat "$TMP/missing.jsonl"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP (part): the no-O_DIRECT, disk-full and throttled directories need root (mount, losetup, cgroups)"
  finish
fi

# ramfs refuses O_DIRECT (tmpfs takes it since Linux 6.6): buffered I/O, said in extra.note.
mkdir -p "$TMP/ram" && mount -t ramfs ramfs "$TMP/ram" && {
  run_fio "$TMP/ram.jsonl" "{\"local_path\":\"$TMP/ram\",\"size\":\"16M\",\"runtime_s\":1}"
  has_result "$TMP/ram.jsonl" local_seq_read pass "" '"direct": false' 'O_DIRECT refused' \
    && pass "no O_DIRECT (ramfs): buffered I/O, with the note" || { bad "buffered fallback"; cat "$TMP/ram.jsonl"; }
  umount "$TMP/ram"
}

mkdir -p "$TMP/full" && mount -t tmpfs -o size=8m tmpfs "$TMP/full" && {
  run_fio "$TMP/full.jsonl" "{\"local_path\":\"$TMP/full\",\"size\":\"64M\",\"runtime_s\":1}"
  has_result "$TMP/full.jsonl" local error "disk full on $TMP/full" && pass "a full disk is ERROR saying so" \
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
