#!/usr/bin/env python3
"""A minimal PyTorch FSDP training loop that reports its throughput to kiln.

Run one process per GPU under jobs/kiln-user-job.sh (which sets RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR and MASTER_PORT from SLURM's variables):

    kiln-user-job.sh --out run1 -- python3 fsdp_example.py --steps 100

Every --log-every steps each rank prints the contract's lines (docs/user-job.md):

    KILN_METRIC {"name": "tokens_per_s", "value": 123456.7, "unit": "tok/s"}
    KILN_METRIC {"name": "samples_per_s", "value": 60.3, "unit": "samples/s"}
    KILN_METRIC {"name": "step_time_s", "value": 0.53, "unit": "s"}

The model is a stack of transformer encoder layers on random tokens: the figures measure the
GPUs, NVLink and network under FSDP's all-gathers and reduce-scatters, not a real model's quality.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def metric(name, value, unit):
    print("KILN_METRIC " + json.dumps({"name": name, "value": value, "unit": unit}), flush=True)


def build_model(args):
    layer = torch.nn.TransformerEncoderLayer(args.width, args.heads, 4 * args.width, batch_first=True)
    return torch.nn.Sequential(
        torch.nn.Embedding(args.vocab, args.width),
        torch.nn.TransformerEncoder(layer, args.layers),
        torch.nn.Linear(args.width, args.vocab),
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5, help="steps not measured")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--batch", type=int, default=8, help="sequences per rank and step")
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--vocab", type=int, default=32000)
    args = p.parse_args()

    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    model = FSDP(build_model(args).cuda(), use_orig_params=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device="cuda")

    window_start, window_steps = None, 0
    for step in range(args.steps):
        if step == args.warmup:
            torch.cuda.synchronize()
            window_start, window_steps = time.perf_counter(), 0
        logits = model(tokens[:, :-1])
        loss = loss_fn(logits.reshape(-1, args.vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if window_start is None:
            continue
        window_steps += 1
        if window_steps == args.log_every or step == args.steps - 1:
            torch.cuda.synchronize()
            elapsed = time.perf_counter() - window_start
            step_time = elapsed / window_steps
            metric("step_time_s", step_time, "s")
            metric("samples_per_s", args.batch / step_time, "samples/s")
            metric("tokens_per_s", args.batch * args.seq / step_time, "tok/s")
            window_start, window_steps = time.perf_counter(), 0
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
