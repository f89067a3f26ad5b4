# Sourced by the GPU bench scripts: takes `--carry DIR` (DIR holds bin/kiln, bin/kiln-worker and
# lib/, a build carried to the GPU machine), sets CARRY, and sets the environment kiln needs there.
CARRY=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --carry) CARRY=$(cd "$2" && pwd); shift 2 ;;
    *) echo "usage: $0 --carry DIR" >&2; exit 2 ;;
  esac
done
[ -x "$CARRY/bin/kiln" ] || { echo "no kiln under --carry" >&2; exit 2; }
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:/usr/local/cuda-13.0/targets/x86_64-linux/lib:$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
