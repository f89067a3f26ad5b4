#!/usr/bin/env bash
# Health-check mode with no spec: the node must have every NVIDIA GPU its PCI bus lists. With the
# sysfs tree recorded on the GPU machine (one H200 on the bus) and no GPU usable here, gpu.health
# fails (exit 1, gpu.count, "the PCI bus ... expects 1") instead of passing as "no GPU"; with the
# development machine's tree (no NVIDIA device) the node is a CPU node and passes with every part
# named as not tested. A spec's GPU count wins over the bus's.
source "$(dirname "$0")/lib.sh"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: this machine has a GPU; the recorded trees stand for a node whose GPUs are not usable"
  exit 77
fi
DATA="$(cd "$(dirname "$0")/.." && pwd)/data/sysfs"
KILN_SYSFS_ROOT="$DATA/gpu-h200-vm" timeout 60 "$WORKER" --health-check > "$TMP/gpu.txt" 2>&1
rc=$?
cat "$TMP/gpu.txt"
[ $rc -eq 1 ] && pass "a GPU on the bus that nothing can use: exit 1" || bad "exit $rc with a GPU on the bus"
grep -q "^kiln-health: FAIL gpu.count: .*0 GPU(s) usable through CUDA, the PCI bus (1 NVIDIA GPU(s)) expects 1" "$TMP/gpu.txt" \
  && pass "the reason names the bus count" || bad "reason"
KILN_SYSFS_ROOT="$DATA/dev-debian12" timeout 60 "$WORKER" --health-check > "$TMP/cpu.txt" 2>&1
rc=$?
cat "$TMP/cpu.txt"
[ $rc -eq 0 ] && pass "no NVIDIA GPU on the bus: exit 0" || bad "exit $rc on a CPU node"
grep -q "^kiln-health: OK: .*not tested: .*gpu.health" "$TMP/cpu.txt" && pass "gpu.health named as not tested" || bad "not-tested line"
cat > "$TMP/spec.toml" <<TOML
[[class]]
name = "cpu"
hosts = "$(hostname)"
[class.hardware]
gpus_per_node = 0
TOML
KILN_SYSFS_ROOT="$DATA/gpu-h200-vm" timeout 60 "$WORKER" --health-check --spec "$TMP/spec.toml" > "$TMP/spec.txt" 2>&1
rc=$?
cat "$TMP/spec.txt"
[ $rc -eq 0 ] && pass "the spec's count (0) wins over the bus's" || bad "exit $rc with a spec of 0 GPUs"
# A class with HCAs: a node where ib.ports finds none fails (hca.count), it does not pass with
# ib.ports untested. The IB tree is an empty directory, so no machine's own HCAs change the result.
mkdir -p "$TMP/no-ib"
cat > "$TMP/spec-hca.toml" <<TOML
[[class]]
name = "cpu-ib"
hosts = "$(hostname)"
[class.hardware]
gpus_per_node = 0
hcas_per_node = 8
hca_rate_gbps = 400
TOML
KILN_IB_SYSFS_ROOT="$TMP/no-ib" KILN_SYSFS_ROOT="$DATA/dev-debian12" timeout 60 "$WORKER" --health-check \
  --spec "$TMP/spec-hca.toml" > "$TMP/hca.txt" 2>&1
rc=$?
cat "$TMP/hca.txt"
[ $rc -eq 1 ] && pass "a class with HCAs and none found: exit 1" || bad "exit $rc with no HCA where the spec has 8"
grep -q "^kiln-health: FAIL hca.count: the spec expects 8 HCA(s): no RDMA device" "$TMP/hca.txt" \
  && pass "the reason names the spec's count" || bad "hca reason"
# Some of them: two HCAs whose ports are ACTIVE where the class has 8 fail hca.count too (they
# passed before: every port that was there was up), and so does a third whose port is DOWN (the
# fixture's mlx5_0 and mlx5_2). With the spec's count met the same tree passes.
IB="$(cd "$(dirname "$0")/.." && pwd)/data/ib/before"
mkdir -p "$TMP/ib2"
cp -r "$IB/mlx5_0" "$TMP/ib2/mlx5_0" && cp -r "$IB/mlx5_0" "$TMP/ib2/mlx5_1"
# expect_hcas HCAS RC WHAT [LINE]: the health check on $TMP/ib2 with a class of HCAS HCAs exits RC
# and, when LINE is given, prints it as its final line.
expect_hcas() {
  sed "s/^hcas_per_node = .*/hcas_per_node = $1/" "$TMP/spec-hca.toml" > "$TMP/spec-hca-$1.toml"
  KILN_IB_SYSFS_ROOT="$TMP/ib2" KILN_SYSFS_ROOT="$DATA/dev-debian12" timeout 60 "$WORKER" --health-check \
    --spec "$TMP/spec-hca-$1.toml" > "$TMP/hca-$1.txt" 2>&1
  local rc=$?
  cat "$TMP/hca-$1.txt"
  [ $rc -eq "$2" ] && pass "$3: exit $2" || bad "$3: exit $rc"
  [ -z "${4:-}" ] || { grep -qF "$4" "$TMP/hca-$1.txt" && pass "$3: the reason" || bad "$3: no line '$4'"; }
}
expect_hcas 8 1 "2 of 8 HCAs" "kiln-health: FAIL hca.count: 2 HCA(s) with an ACTIVE port, the spec expects 8"
expect_hcas 2 0 "2 of 2 HCAs"
cp -r "$IB/mlx5_2" "$TMP/ib2/mlx5_2"
expect_hcas 3 1 "3 HCAs, one port DOWN, spec 3" \
  "kiln-health: FAIL hca.count: 2 HCA(s) with an ACTIVE port (not active: mlx5_2:1 DOWN), the spec expects 3"
finish
