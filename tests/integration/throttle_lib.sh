# A throttled directory for storage tests (sourced): an ext4 file system on a loop device, mounted
# at DIR/mnt, with a cgroup that caps reads and writes to BPS bytes/s and reads to IOPS per second
# on that device. cgroup v2 io.max where the io controller is on v2; else cgroup v1
# blkio.throttle.*. A process throttles itself by writing its pid to $THROTTLE_PROCS.
# setup_throttled_dir DIR BPS IOPS: 0 when ready; 1 with the reason in THROTTLE_WHY.
THROTTLE_LOOP="" THROTTLE_CG="" THROTTLE_MNT="" THROTTLE_PROCS="" THROTTLE_KIND="" THROTTLE_WHY=""
setup_throttled_dir() {
  local dir=$1 bps=$2 iops=$3 mm
  mkdir -p "$dir/mnt"
  truncate -s 256M "$dir/disk.img" || { THROTTLE_WHY="cannot make the image"; return 1; }
  THROTTLE_LOOP=$(losetup -f --show "$dir/disk.img" 2>&1) || { THROTTLE_WHY="losetup: $THROTTLE_LOOP"; THROTTLE_LOOP=""; return 1; }
  mkfs.ext4 -q "$THROTTLE_LOOP" && mount "$THROTTLE_LOOP" "$dir/mnt" || { THROTTLE_WHY="mkfs/mount failed"; return 1; }
  THROTTLE_MNT="$dir/mnt"
  mm=$(lsblk -dno MAJ:MIN "$THROTTLE_LOOP" | tr -d ' ')
  local v2=/sys/fs/cgroup
  if [ "$(stat -fc %T $v2)" = cgroup2fs ] && grep -qw io $v2/cgroup.controllers; then
    echo +io > $v2/cgroup.subtree_control 2>/dev/null
    THROTTLE_CG=$v2/kiln-it-$$; mkdir -p "$THROTTLE_CG"
    echo "$mm rbps=$bps wbps=$bps riops=$iops" > "$THROTTLE_CG/io.max" || { THROTTLE_WHY="io.max refused"; return 1; }
    THROTTLE_KIND="cgroup v2 io.max"
  elif [ -d $v2/blkio ] && [ -e $v2/blkio/blkio.throttle.read_bps_device ]; then
    THROTTLE_CG=$v2/blkio/kiln-it-$$; mkdir -p "$THROTTLE_CG" || { THROTTLE_WHY="cannot make a blkio cgroup"; return 1; }
    echo "$mm $bps" > "$THROTTLE_CG/blkio.throttle.read_bps_device" &&
      echo "$mm $bps" > "$THROTTLE_CG/blkio.throttle.write_bps_device" &&
      echo "$mm $iops" > "$THROTTLE_CG/blkio.throttle.read_iops_device" || { THROTTLE_WHY="blkio.throttle refused"; return 1; }
    THROTTLE_KIND="cgroup v1 blkio.throttle (no io controller on cgroup v2 here)"
  else
    THROTTLE_WHY="no cgroup v2 io controller and no cgroup v1 blkio here ($(stat -fc %T $v2) at $v2)"
    return 1
  fi
  THROTTLE_PROCS=$THROTTLE_CG/cgroup.procs
}
teardown_throttled_dir() {
  [ -n "$THROTTLE_MNT" ] && umount "$THROTTLE_MNT" 2>/dev/null
  [ -n "$THROTTLE_LOOP" ] && losetup -d "$THROTTLE_LOOP" 2>/dev/null
  [ -n "$THROTTLE_CG" ] && rmdir "$THROTTLE_CG" 2>/dev/null
  return 0
}
