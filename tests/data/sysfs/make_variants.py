#!/usr/bin/env python3
"""Builds the variant-* trees from the recorded gpu-h200-vm tree, for the faults the recorded
machines do not have. Re-run from this folder: python3 make_variants.py (it replaces the variants)."""
import os, shutil

SRC = "gpu-h200-vm"


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def config(vendor, device, cls, acs_control=None, devctl=0x2000, size=4096):
    """A type-1 style config space: header, a PCIe capability at 0x40, an ACS capability at 0x100."""
    c = bytearray(size)
    c[0:2], c[2:4] = vendor.to_bytes(2, "little"), device.to_bytes(2, "little")
    c[0x06] = 0x10  # Status: capability list
    c[0x09:0x0c] = cls.to_bytes(3, "little")
    c[0x34] = 0x40
    c[0x40], c[0x41] = 0x10, 0x00  # PCIe capability, last in the list
    c[0x48:0x4a] = devctl.to_bytes(2, "little")
    if acs_control is not None and size >= 0x108:
        c[0x100:0x104] = (0x000D | (1 << 16)).to_bytes(4, "little")  # ACS, version 1, no next
        c[0x104:0x106] = (0x001F).to_bytes(2, "little")  # ACS Capability: SV, TB, RR, CR, UF
        c[0x106:0x108] = acs_control.to_bytes(2, "little")
    return bytes(c[:size])


def function(root, dev_dir, vendor, cls, numa, width=16, max_width=16, cfg=None):
    d = os.path.join(root, dev_dir)
    for name, value in {"vendor": f"0x{vendor:04x}", "device": "0x0000", "class": f"0x{cls:06x}",
                        "numa_node": str(numa), "current_link_width": str(width),
                        "max_link_width": str(max_width), "current_link_speed": "32.0 GT/s PCIe",
                        "max_link_speed": "32.0 GT/s PCIe"}.items():
        write(os.path.join(d, name), value + "\n")
    write(os.path.join(d, "config"), cfg if cfg is not None else config(vendor, 0, cls))
    name = os.path.basename(dev_dir)
    link = os.path.join(root, "sys/bus/pci/devices", name)
    os.makedirs(os.path.dirname(link), exist_ok=True)
    os.symlink(os.path.relpath(d, os.path.dirname(link)), link)


def faults():
    """The GPU behind an ACS-enabled bridge at x8 of x16; an HCA on another NUMA node with only the
    64-byte header readable; an NVSwitch with no fabric manager; a translating IOMMU; memlock 64 KiB."""
    root = "variant-faults"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(SRC, root, symlinks=True)
    old = os.path.join(root, "sys/devices/pci0000:00/0000:00:06.0")
    bridge = "sys/devices/pci0000:00/0000:00:02.0"
    os.remove(os.path.join(root, "sys/bus/pci/devices/0000:00:06.0"))
    function(root, bridge, 0x8086, 0x060400, 0, cfg=config(0x8086, 0, 0x060400, acs_control=0x001D))
    os.remove(os.path.join(root, "sys/bus/pci/devices/0000:00:02.0"))  # a bridge, not a listed endpoint
    new = os.path.join(root, bridge, "0000:01:00.0")
    shutil.move(old, new)
    write(os.path.join(new, "current_link_width"), "8\n")
    write(os.path.join(new, "numa_node"), "0\n")
    write(os.path.join(new, "iommu_group/type"), "DMA-FQ\n")
    os.symlink("../../../devices/pci0000:00/0000:00:02.0/0000:01:00.0",
               os.path.join(root, "sys/bus/pci/devices/0000:01:00.0"))
    hca_cfg = config(0x15B3, 0x1021, 0x020700)[:64]
    function(root, "sys/devices/pci0000:00/0000:00:07.0", 0x15B3, 0x020700, 1, cfg=hca_cfg)
    function(root, "sys/devices/pci0000:00/0000:00:08.0", 0x10DE, 0x068000, 0)
    write(os.path.join(root, "sys/class/iommu/dmar0/.keep"), "")
    write(os.path.join(root, "proc/cmdline"), "ro quiet intel_iommu=on\n")
    write(os.path.join(root, "proc/self/limits"),
          "Max locked memory         65536                65536                bytes     \n")


def fabric_ok():
    """An NVSwitch and a running nv-fabricmanager (its comm, cut to 15 characters as the kernel does)."""
    root = "variant-nvswitch-fm"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(SRC, root, symlinks=True)
    function(root, "sys/devices/pci0000:00/0000:00:08.0", 0x10DE, 0x068000, 0)
    write(os.path.join(root, "proc/4242/comm"), "nv-fabricmanage\n")


faults()
fabric_ok()
