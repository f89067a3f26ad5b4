#!/usr/bin/env python3
"""PyTorch FSDP reference for kiln's model.fsdp_step: the same step shape, timed the same way.

A stack of `layers` bf16 nn.Linear(hidden, hidden, bias=False) layers, each sharded with FSDP
(FSDP2 `fully_shard` where torch has it, else FSDP1 with one unit per layer), fed `tokens` tokens
per rank; one step is the forward pass and the backward pass from a fixed output gradient, with the
input's gradient computed too (kiln's step computes dX for every layer). FSDP all-gathers each
layer's weights before its forward, again before its backward (resharding after forward, FSDP's
default), and reduce-scatters its gradient, overlapping both with the GEMMs as it does by default.

Run with torchrun, one process per GPU (1 GPU works):
    torchrun --nproc-per-node NGPU bench/fsdp_ref.py --layers 8 --hidden 8192 --tokens 8192
Rank 0 prints one JSON line: step_ms (the slowest rank's median step), tflops (per GPU), and the shape.
"""
import argparse
import json
import os
import statistics

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # before NCCL starts: NVLS multicast stays off

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=8192)
    ap.add_argument("--tokens", type=int, default=8192, help="tokens per rank")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    return ap.parse_args()


def shard(model):
    """FSDP2 where available, else FSDP1; returns the wrapped model and which API it used."""
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        fully_shard = None
    if fully_shard is not None:
        for layer in model:
            fully_shard(layer)
        fully_shard(model)
        return model, "fsdp2"
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    wrapped = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({torch.nn.Linear}), device_id=torch.cuda.current_device(),
                   use_orig_params=True)
    return wrapped, "fsdp1"


def timed_steps(model, x, dy, warmup, steps):
    def step():
        model.zero_grad(set_to_none=True)
        x.grad = None
        model(x).backward(dy)

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    times = []
    for _ in range(steps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    a = parse()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    world, rank = dist.get_world_size(), dist.get_rank()
    torch.manual_seed(0)  # the same weights and inputs on every rank, as kiln's step
    model = torch.nn.Sequential(*[torch.nn.Linear(a.hidden, a.hidden, bias=False) for _ in range(a.layers)])
    model = model.to(device=dev, dtype=torch.bfloat16)
    model, api = shard(model)
    x = torch.randn(a.tokens, a.hidden, device=dev, dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(a.tokens, a.hidden, device=dev, dtype=torch.bfloat16)
    torch.cuda.reset_peak_memory_stats()

    mine = timed_steps(model, x, dy, a.warmup, a.steps)
    worst = torch.tensor([mine], device=dev, dtype=torch.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    step_ms = worst.item()
    flops = 6.0 * a.layers * a.tokens * a.hidden * a.hidden
    if rank == 0:
        print(json.dumps({"step_ms": step_ms, "tflops": flops / (step_ms * 1e-3) / 1e12, "step_ms_rank0": mine,
                          "layers": a.layers, "hidden": a.hidden, "tokens": a.tokens, "nranks": world,
                          "steps": a.steps, "api": api, "torch": torch.__version__,
                          "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
