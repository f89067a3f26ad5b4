#!/usr/bin/env bash
# Installs the Debian 12 packages kiln needs to build and test, when they are missing.
# Runs as root, or through sudo. CUDA/NCCL are optional: when /usr/local/cuda* is absent the
# worker builds its CPU paths and the GPU tests report SKIP. clang and libclang-rt-14-dev (its
# libFuzzer and sanitizer runtimes) build the fuzz targets (tests/fuzz, docs/fuzzing.md); chromium
# (headless) opens report.html in tests/integration/test_report_html.sh.
# libxml2-utils (xmllint), prometheus (promtool) and influxdb (influxd) check the exports
# (tests/integration/test_exports.sh); their servers are never left running (see below).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3 python3-jsonschema
  libopenmpi-dev openmpi-bin libpmix2
  libboost-program-options-dev libboost-dev nlohmann-json3-dev libspdlog-dev catch2
  libibverbs-dev libssl-dev libsqlite3-dev sqlite3 libtomlplusplus-dev fio
  slurm-wlm slurmd slurmctld slurm-client munge
  iproute2 procps psmisc util-linux bc mawk
  clang libclang-rt-14-dev
  chromium
  libxml2-utils prometheus influxdb curl
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "install-deps: error: missing packages (${missing[*]}) and not root; rerun as root or install sudo" >&2
    exit 2
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Debian's munge/slurm packages may try to start services on install; the testbed runs its own.
$SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
# prometheus, prometheus-node-exporter and influxdb start their servers from postinst (systemd, or
# invoke-rc.d where policy-rc.d allows it). Only their tools are wanted: stop what was started,
# and keep it from starting at boot, so that CI is left with nothing listening.
for svc in prometheus prometheus-node-exporter influxdb; do
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
  elif [ -x "/etc/init.d/$svc" ]; then
    $SUDO "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
  fi
done
echo "install-deps: done"
