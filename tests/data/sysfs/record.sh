#!/bin/bash
# Records the read-only sysfs/procfs files a stack check reads, into a tree that mirrors / .
set -u
dst=${1:?dst}
mkdir -p "$dst"
copy() { local f=$1; [ -r "$f" ] || return 0; mkdir -p "$dst$(dirname "$f")"; timeout 2 cat "$f" > "$dst$f" 2>/dev/null || rm -f "$dst$f"; }
rec_dev() { # a PCI device dir (resolved), and every bridge above it
  local d=$1
  while [[ $d == /sys/devices/pci* && -e $d/vendor ]]; do
    for a in vendor device subsystem_vendor subsystem_device class revision current_link_speed current_link_width \
             max_link_speed max_link_width numa_node local_cpulist local_cpus config driver_override \
             iommu_group/type enable msi_bus; do copy "$d/$a"; done
    [ -L "$d/driver" ] && { mkdir -p "$dst$d"; readlink "$d/driver" > "$dst$d/driver.link"; }
    [ -L "$d/iommu_group" ] && { mkdir -p "$dst$d"; readlink "$d/iommu_group" > "$dst$d/iommu_group.link"; }
    d=$(dirname "$d")
  done
}
for dev in /sys/bus/pci/devices/*; do
  cls=$(cat "$dev/class"); ven=$(cat "$dev/vendor")
  case "$ven:$cls" in
    0x10de:0x0302*|0x10de:0x0300*|0x15b3:*|0x10de:0x0680*|*:0x0207*|*:0x0200*) rec_dev "$(readlink -f "$dev")"; mkdir -p "$dst/sys/bus/pci/devices"; ln -sfn "$(readlink "$dev")" "$dst/sys/bus/pci/devices/$(basename "$dev")";;
  esac
done
for f in /proc/version /proc/cmdline /proc/meminfo /proc/cpuinfo /proc/driver/nvidia/version /sys/module/nvidia/version \
         /sys/kernel/mm/transparent_hugepage/enabled /proc/sys/kernel/numa_balancing /etc/os-release; do copy "$f"; done
for g in /proc/driver/nvidia/gpus/*/information; do copy "$g"; done
ls -d /sys/class/iommu/* > "$dst/iommu_list.txt" 2>&1
ls /sys/kernel/iommu_groups | wc -l > "$dst/iommu_groups_count.txt"
for t in /sys/kernel/iommu_groups/*/type; do copy "$t"; done
ls -la /sys/class/infiniband > "$dst/infiniband_ls.txt" 2>&1
{ echo "ulimit -l: $(ulimit -l)"; grep -i locked /proc/self/limits; } > "$dst/memlock.txt"
nvidia-smi -q > "$dst/nvidia-smi-q.txt" 2>&1
nvidia-smi topo -m > "$dst/nvidia-smi-topo.txt" 2>&1
nvidia-smi --query-gpu=index,pci.bus_id,vbios_version,driver_version,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max --format=csv > "$dst/nvidia-smi-query.csv" 2>&1
{ pgrep -a nv-fabricmanager; systemctl is-active nvidia-fabricmanager; ls /usr/bin/nv-fabricmanager; } > "$dst/fabricmanager.txt" 2>&1
{ ls -la /usr/lib/x86_64-linux-gnu/libnccl* /usr/lib/x86_64-linux-gnu/libibverbs* /usr/lib/x86_64-linux-gnu/libmpi.so*; ompi_info --version; ls /usr/local/ | grep -i cuda; cat /usr/local/cuda/version.json 2>/dev/null | head -20; uname -a; } > "$dst/versions.txt" 2>&1
lspci -vvv > "$dst/lspci-vvv.txt" 2>&1
lspci -tv > "$dst/lspci-tv.txt" 2>&1
echo done
