#!/usr/bin/env python3
# Managed by gpulab (roles/validation). Local changes are overwritten.
"""gpulab collective benchmark: all-reduce sweep and DDP step time, one process per GPU (or per node on CPU).

Run under torchrun on every node; rank 0 writes the JSON result. NCCL on GPUs, gloo on CPU.
Scaling is strong scaling: the same global batch on 1 worker and on N workers, so
efficiency = T1 / (N * TN).
"""

import argparse
import datetime
import json
import os
import socket
import time

import torch
import torch.distributed as dist
from torch import nn


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", required=True, help="JSON result path (written by rank 0)")
    parser.add_argument("--sizes", default="4096,65536,1048576,16777216", help="all-reduce sizes in bytes")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10, help="timed training steps")
    parser.add_argument("--global-batch", type=int, default=256)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--threads", type=int, default=0, help="CPU threads per worker (0: torch's default)")
    return parser.parse_args()


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def slowest(seconds, device):
    """The slowest rank's time: a collective is as fast as its slowest member."""
    t = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def gather_hostnames(world, device):
    """Every rank's hostname (all_gather_object would need numpy)."""
    name = socket.gethostname().encode()[:64].ljust(64, b"\0")
    mine = torch.tensor(list(name), dtype=torch.uint8, device=device)
    every = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(every, mine)
    return [bytes(t.tolist()).rstrip(b"\0").decode() for t in every]


def allreduce_sweep(sizes, iters, warmup, world, device):
    rows = []
    for size in sizes:
        tensor = torch.ones(max(size // 4, 1), dtype=torch.float32, device=device)
        for _ in range(warmup):
            dist.all_reduce(tensor)
        sync(device)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(tensor)
        sync(device)
        seconds = slowest((time.perf_counter() - start) / iters, device)
        algbw = tensor.numel() * 4 / seconds / 1e9
        # Same bus-bandwidth factor as nccl-tests' all_reduce: 2(n-1)/n.
        rows.append(
            {
                "bytes": tensor.numel() * 4,
                "time_us": round(seconds * 1e6, 1),
                "algbw_gbs": round(algbw, 4),
                "busbw_gbs": round(algbw * 2 * (world - 1) / world, 4),
            }
        )
    return rows


def model(width, depth, device):
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 1)).to(device)


def step_time(net, batch, width, steps, device):
    """Mean seconds per forward+backward+optimizer step on a synthetic batch."""
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    inputs = torch.randn(batch, width, device=device)
    target = torch.randn(batch, 1, device=device)
    loss_fn = nn.MSELoss()

    def one_step():
        optimizer.zero_grad(set_to_none=True)
        loss_fn(net(inputs), target).backward()
        optimizer.step()

    for _ in range(2):
        one_step()
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        one_step()
    sync(device)
    return (time.perf_counter() - start) / steps


def main():
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    use_cuda = torch.cuda.is_available()
    backend = "nccl" if use_cuda else "gloo"
    dist.init_process_group(backend, timeout=datetime.timedelta(minutes=10))
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    hosts = gather_hostnames(world, device)

    sizes = [int(s) for s in args.sizes.split(",") if s]
    sweep = allreduce_sweep(sizes, args.iters, args.warmup, world, device)

    # Baseline: rank 0 alone trains the whole global batch while the others wait.
    t1 = (
        step_time(model(args.width, args.depth, device), args.global_batch, args.width, args.steps, device)
        if rank == 0
        else 0.0
    )
    dist.barrier()
    per_worker = max(args.global_batch // world, 1)
    ddp = nn.parallel.DistributedDataParallel(
        model(args.width, args.depth, device), device_ids=[local_rank] if use_cuda else None
    )
    tn = slowest(step_time(ddp, per_worker, args.width, args.steps, device), device)

    if rank == 0:
        result = {
            "backend": backend,
            "torch": torch.__version__,
            "world_size": world,
            "hosts": sorted(set(hosts)),
            "allreduce": sweep,
            "ddp": {
                "scaling": "strong",
                "global_batch": args.global_batch,
                "batch_per_worker": per_worker,
                "steps": args.steps,
                "width": args.width,
                "depth": args.depth,
                "step_time_1_ms": round(t1 * 1e3, 3),
                "step_time_n_ms": round(tn * 1e3, 3),
                "workers": world,
            },
        }
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
