#!/usr/bin/env python3
"""Prints gpu_bench.sh's summary table from kiln-worker's JSON lines and the references' lines.

usage: gpu_bench_table.py results.jsonl refs.jsonl
"""
import json
import statistics
import sys


def load(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
    return out


res, refs = load(sys.argv[1]), load(sys.argv[2])


def pick(bench, test=None, metric=None, kind=None):
    return [r for r in res if r.get("bench") == bench and (test is None or r.get("test") == test)
            and (metric is None or r.get("metric") == metric)
            and (kind is None or r.get("entity", {}).get("kind") == kind)]


def gpu_of(r):
    return r["entity"]["id"].rsplit("/", 1)[-1]


def fails(bench):
    return [r for r in res if r.get("bench") == bench and r["status"] in ("fail", "error", "timeout")
            and r.get("record") != "end"]


def verdict(bench):
    st = [r for r in res if r.get("bench") == bench and r.get("record") == "end"]
    return ",".join(f'{r["test"]}={r["status"]}' for r in st) or "no result"


lines = []
p = lines.append
p("")
p("=" * 100)
p("kiln GPU bench")

# Health.
for r in pick("health.clean", "gpu.health"):
    if r.get("metric") == "gpu_count":
        p(f'gpu.health clean: gpu_count={r["value"]:.0f} status={r["status"]} {r.get("reason", "")}')
    if r.get("metric") == "driver":
        p(f'  driver {r["extra"].get("driver_version")} CUDA {r["value"]}')
    if r.get("metric") == "health":
        x = r["extra"]
        p(f'  {gpu_of(r)} {x.get("name")} health={r["status"]} {r.get("reason", "")} ecc={x.get("ecc_enabled")} '
          f'pcie gen{x.get("pcie_gen", {}).get("current")}/{x.get("pcie_gen", {}).get("max")} '
          f'x{x.get("pcie_width", {}).get("current")}/{x.get("pcie_width", {}).get("max")} '
          f'power_limit={x.get("power_limit_w")}W remap={x.get("remapped_rows")} persist={x.get("persistence_mode")} '
          f'mig={x.get("mig_mode", {}).get("current")} throttle={x.get("throttle_reasons")}')

# 1. GEMM ratio.
p("")
p("1. bf16 8192^3 GEMM, all GPUs at once: gpu.burn vs plain cuBLAS loop (same run)")
p(f'{"gpu":6} {"ref before":>11} {"gpu.burn":>10} {"ref after":>10} {"ratio":>7}  (TFLOP/s; ratio = burn / mean(refs))')
ref1 = {r["cuda_ordinal"]: r["tflops"] for r in refs if r.get("bench") == "ref1"}
ref2 = {r["cuda_ordinal"]: r["tflops"] for r in refs if r.get("bench") == "ref2"}
for r in pick("burn.ratio", "gpu.burn", "tflops"):
    o = r["extra"]["cuda_ordinal"]
    refs_here = [v for v in (ref1.get(o), ref2.get(o)) if v]
    m = statistics.mean(refs_here) if refs_here else float("nan")
    p(f'{gpu_of(r):6} {ref1.get(o, float("nan")):11.1f} {r["value"]:10.1f} {ref2.get(o, float("nan")):10.1f} '
      f'{r["value"] / m:7.3f}')

# 2. Sustained.
p("")
p("2. sustained gpu.burn (clean run)")
p(f'{"gpu":6} {"TFLOP/s":>8} {"1s min":>7} {"1s med":>7} {"W med":>6} {"W max":>6} {"C max":>6} '
  f'{"SM MHz med":>10} {"min":>5} {"errors":>7} {"checked":>8}  throttle reasons (samples)')
tel = {gpu_of(r): r for r in pick("burn.sustained", "gpu.burn", "throttle")}
err = {gpu_of(r): r for r in pick("burn.sustained", "gpu.burn", "errors")}
for r in pick("burn.sustained", "gpu.burn", "tflops"):
    g = gpu_of(r)
    ps = r["extra"]["per_second"]
    t = tel.get(g, {"extra": {}})["extra"]
    e = err.get(g, {"value": float("nan"), "extra": {}})
    p(f'{g:6} {r["value"]:8.1f} {ps["min"]:7.1f} {ps["median"]:7.1f} {t.get("power_w", {}).get("median", 0):6.0f} '
      f'{t.get("power_w", {}).get("max", 0):6.0f} {t.get("temperature_c", {}).get("max", 0):6.0f} '
      f'{t.get("sm_clock_mhz", {}).get("median", 0):10.0f} {t.get("sm_clock_mhz", {}).get("min", 0):5.0f} '
      f'{e["value"]:7.0f} {e["extra"].get("verified_gemms", 0):8}  {t.get("reasons")}')
p(f'   verdict: {verdict("burn.sustained")}; failing results: {len(fails("burn.sustained"))}')

# 3. Drills.
p("")
p("3. drills")
for r in pick("drill.bitflip", "gpu.burn", "errors"):
    p(f'  bit flip      {gpu_of(r)}: errors={r["value"]:.0f} status={r["status"]} {r.get("reason", "")}')
for r in pick("drill.slow", "gpu.burn", "tflops"):
    p(f'  slowed GPU    {gpu_of(r)}: {r["value"]:.1f} TFLOP/s status={r["status"]} '
      f'outlier={r["extra"].get("outlier", False)} {r.get("reason", "")}')
for r in pick("drill.hidden", "gpu.health", "gpu_count"):
    p(f'  hidden GPU    gpu_count={r["value"]:.0f} status={r["status"]} {r.get("reason", "")}')
for r in pick("drill.memtest", "gpu.memtest", "errors"):
    p(f'  memtest poke  {gpu_of(r)}: errors={r["value"]:.0f} status={r["status"]} {r.get("reason", "")}')
for b in ("health.clean", "burn.ratio", "burn.sustained", "memtest", "copy", "health.after"):
    p(f'  clean {b:15} failing results: {len(fails(b))}  ({verdict(b)})')

# 4. Memory.
p("")
p("4. gpu.memtest vs plain CUDA (GB/s)")
d2d = {r["cuda_ordinal"]: r for r in refs if r.get("ref") == "memcpy_d2d"}
mset = {r["cuda_ordinal"]: r for r in refs if r.get("ref") == "memset"}
wr = {gpu_of(r): r["value"] for r in pick("memtest", "gpu.memtest", "write_bw")}
rd = {gpu_of(r): r["value"] for r in pick("memtest", "gpu.memtest", "read_bw")}
p(f'{"gpu":6} {"GiB tested":>10} {"errors":>7} {"write":>7} {"memset":>7} {"w/ref":>6} {"read":>7} '
  f'{"memcpy r+w":>10} {"r/ref":>6}')
for i, r in enumerate(pick("memtest", "gpu.memtest", "errors")):
    g = gpu_of(r)
    o = i  # GPUs are listed in CUDA order
    ms = mset.get(o, {}).get("write_gbps", float("nan"))
    cp = d2d.get(o, {}).get("rw_gbps", float("nan"))
    p(f'{g:6} {r["extra"].get("bytes_tested", 0) / 2**30:10.1f} {r["value"]:7.0f} {wr.get(g, 0):7.0f} {ms:7.0f} '
      f'{wr.get(g, 0) / ms:6.2f} {rd.get(g, 0):7.0f} {cp:10.0f} {rd.get(g, 0) / cp:6.2f}')

# 5. Copies.
p("")
p("5. gpu.copy_bw vs plain CUDA (GB/s)")
for r in pick("copy", "gpu.copy_bw", kind="gpu"):
    if r.get("metric") == "d2d":
        o = r["extra"]["cuda_ordinal"]
        ref_v = d2d.get(o, {}).get("copy_gbps", float("nan"))
        p(f'  {gpu_of(r)} d2d {r["value"]:7.1f}  cudaMemcpy D2D {ref_v:7.1f}  ratio {r["value"] / ref_v:5.2f}')
    elif r.get("metric") in ("h2d", "d2h"):
        p(f'  {gpu_of(r)} {r.get("metric")} {r["value"]:7.1f}  status={r["status"]}')
peer = {(r["src"], r["dst"]): r["gbps"] for r in refs if r.get("ref") == "memcpy_peer"}
for r in pick("copy", "gpu.copy_bw", "peer_matrix"):
    if r["status"] == "skip":
        p(f'  peer matrix: skip ({r.get("reason")})')
        continue
    m, gpus = r["extra"]["matrix"], r["extra"]["gpus"]
    p(f'  peer matrix (row src, col dst), gpu.copy_bw | cudaMemcpyPeer:')
    for i, row in enumerate(m):
        cells = []
        for j, v in enumerate(row):
            cells.append("      -       " if v is None else f'{v:6.1f}|{peer.get((i, j), float("nan")):6.1f}')
        p(f'    gpu{gpus[i]}: ' + "  ".join(cells))
    p(f'  status={r["status"]} {r.get("reason", "")}')

# 6. The FSDP-shaped step.
p("")
p("6. model.fsdp_step vs PyTorch FSDP (same shape, one rank per GPU)")
fsdp_ref = [r for r in refs if r.get("bench") == "fsdp_ref"]
for r in pick("fsdp", "model.fsdp_step"):
    x = r.get("extra", {})
    if r.get("metric") == "tflops" and r["status"] == "pass":
        mfu = f'{x["mfu"]:.3f}' if "mfu" in x else "- (" + x.get("mfu_note", "") + ")"
        p(f'  kiln   step {x["step_ms"]:8.2f} ms  {r["value"]:6.1f} TFLOP/s/GPU  MFU {mfu}  compute-only '
          f'{x["compute_only_ms"]:.2f} ms  comm-only {x["comm_only_ms"]:.2f} ms  exposed {x["exposed_comm_ms"]:.2f} ms'
          f'  comm share {x["comm_share"]:.3f}  ({x["layers"]}x{x["hidden"]}, {x["tokens"]} tokens, {x["nranks"]} GPUs)')
    elif r.get("metric") == "determinism":
        p(f'  kiln   determinism {r["status"]} {r.get("reason", "")}')
    elif r.get("record") == "end" and r["status"] != "pass":
        p(f'  kiln   {r["status"]}: {r.get("reason", "")}')
for r in fsdp_ref:
    p(f'  torch  step {r["step_ms"]:8.2f} ms  {r["tflops"]:6.1f} TFLOP/s/GPU  ({r.get("api")} torch {r.get("torch")}, '
      f'peak mem {r.get("peak_mem_gib", 0):.1f} GiB)')
kf = [r for r in pick("fsdp", "model.fsdp_step", "tflops") if r["status"] == "pass"]
if kf and fsdp_ref:
    p(f'  ratio kiln/pytorch step time: {kf[0]["extra"]["step_ms"] / fsdp_ref[-1]["step_ms"]:.3f}')
elif not fsdp_ref:
    p("  no PyTorch reference (torch not importable, or it failed: see fsdp/compare.log)")
p("=" * 100)
print("\n".join(lines))
