# A throttled directory for storage tests (sourced): an ext4 file system on a loop device, mounted
# at DIR/mnt, with a cgroup that caps reads and writes to BPS bytes/s and reads to IOPS per second
# on that device. cgroup v2 io.max where the io controller is on v2; else cgroup v1
# blkio.throttle.*. A process throttles itself by writing its pid to $THROTTLE_PROCS.
# setup_throttled_dir DIR BPS IOPS: 0 when ready; 1 with the reason in THROTTLE_WHY.
THROTTLE_LOOP="" THROTTLE_CG="" THROTTLE_MNT="" THROTTLE_PROCS="" THROTTLE_KIND="" THROTTLE_WHY="" THROTTLE_NEW_CG=""
THROTTLE_CGS=()  # every cgroup throttle_cgroup made, removed by teardown_throttled_dir
setup_throttled_dir() {
  local dir=$1 bps=$2 iops=$3
  mkdir -p "$dir/mnt"
  truncate -s 256M "$dir/disk.img" || { THROTTLE_WHY="cannot make the image"; return 1; }
  THROTTLE_LOOP=$(losetup -f --show "$dir/disk.img" 2>&1) || { THROTTLE_WHY="losetup: $THROTTLE_LOOP"; THROTTLE_LOOP=""; return 1; }
  mkfs.ext4 -q "$THROTTLE_LOOP" && mount "$THROTTLE_LOOP" "$dir/mnt" || { THROTTLE_WHY="mkfs/mount failed"; return 1; }
  THROTTLE_MNT="$dir/mnt"
  throttle_cgroup kiln-it-$$ "$bps" "$iops" || return 1
  THROTTLE_CG=$THROTTLE_NEW_CG
  THROTTLE_PROCS=$THROTTLE_CG/cgroup.procs
}
# throttle_cgroup NAME BPS IOPS: makes cgroup NAME capping reads and writes to BPS bytes/s and
# reads to IOPS per second on $THROTTLE_LOOP's device, its directory in THROTTLE_NEW_CG (a process
# moves in by writing its pid to DIR/cgroup.procs); 1 with the reason in THROTTLE_WHY.
throttle_cgroup() {
  local name=$1 bps=$2 iops=$3 mm cg v2=/sys/fs/cgroup
  mm=$(lsblk -dno MAJ:MIN "$THROTTLE_LOOP" | tr -d ' ')
  if [ "$(stat -fc %T $v2)" = cgroup2fs ] && grep -qw io $v2/cgroup.controllers; then
    echo +io > $v2/cgroup.subtree_control 2>/dev/null
    cg=$v2/$name; mkdir -p "$cg" || { THROTTLE_WHY="cannot make cgroup $cg"; return 1; }
    THROTTLE_CGS+=("$cg")
    echo "$mm rbps=$bps wbps=$bps riops=$iops" > "$cg/io.max" || { THROTTLE_WHY="io.max refused"; return 1; }
    THROTTLE_KIND="cgroup v2 io.max"
  elif [ -d $v2/blkio ] && [ -e $v2/blkio/blkio.throttle.read_bps_device ]; then
    cg=$v2/blkio/$name; mkdir -p "$cg" || { THROTTLE_WHY="cannot make a blkio cgroup"; return 1; }
    THROTTLE_CGS+=("$cg")
    echo "$mm $bps" > "$cg/blkio.throttle.read_bps_device" &&
      echo "$mm $bps" > "$cg/blkio.throttle.write_bps_device" &&
      echo "$mm $iops" > "$cg/blkio.throttle.read_iops_device" || { THROTTLE_WHY="blkio.throttle refused"; return 1; }
    THROTTLE_KIND="cgroup v1 blkio.throttle (no io controller on cgroup v2 here)"
  else
    THROTTLE_WHY="no cgroup v2 io controller and no cgroup v1 blkio here ($(stat -fc %T $v2) at $v2)"
    return 1
  fi
  THROTTLE_NEW_CG=$cg
}
teardown_throttled_dir() {
  [ -n "$THROTTLE_MNT" ] && umount "$THROTTLE_MNT" 2>/dev/null
  [ -n "$THROTTLE_LOOP" ] && losetup -d "$THROTTLE_LOOP" 2>/dev/null
  local cg
  for cg in "${THROTTLE_CGS[@]}"; do rmdir "$cg" 2>/dev/null; done
  return 0
}
