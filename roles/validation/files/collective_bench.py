#!/usr/bin/env python3
# Managed by gpulab (roles/validation). Local changes are overwritten.
"""gpulab collective benchmark: all-reduce sweep and DDP scaling, one process per GPU (or per node on CPU).

Run under torchrun on every node (directly, or through srun); rank 0 prints one line
"GPULAB_BENCH_RESULT <json>". NCCL on GPUs, gloo on CPU.

The work is sized to the device: rank 0 doubles the batch until one worker's step takes at
least --min-step-ms, so the step is compute-bound and not launch-bound. Then:
- strong scaling: that global batch on 1 worker (T1) and split over N workers (TN):
  efficiency = T1 / (N * TN);
- weak scaling: that batch on every one of N workers (TW): efficiency = T1 / TW.
On GPUs, each node's first rank reads its GPUs with nvidia-smi while the DDP steps run (hottest,
lowest SM clock, narrowest PCIe link, clock event reasons): rank 0 reports them per host.
"""

import argparse
import contextlib
import datetime
import json
import os
import socket
import subprocess
import sys
import threading
import time

import torch
import torch.distributed as dist
from torch import nn

MARKER = "GPULAB_BENCH_RESULT "
KIB, MIB = 1024, 1024**2
# Sizes that can fill a link on GPUs (up to 1 GiB); on CPU the sweep stops at 16 MiB.
SIZES = {"cuda": [4 * KIB * 4**i for i in range(10)], "cpu": [4 * KIB, 64 * KIB, MIB, 16 * MIB]}
# Model per device: on GPUs 8 x 4096 (134M parameters, a 537 MB gradient to all-reduce every step).
SHAPES = {"cuda": (4096, 8), "cpu": (1024, 4)}


# What the GPUs do under load, and the clock event reasons (their name before driver 535 second).
LOAD_QUERY = (
    "index,temperature.gpu,clocks.sm,clocks.max.sm,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current"
)
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")


def number(text):
    """An nvidia-smi value as an int ('0x...' masks too); None for [N/A], [Not Supported] and the like."""
    text = text.strip()
    try:
        return int(text, 16) if text.startswith("0x") else int(float(text))
    except ValueError:
        return None


def merge_sample(gpus, line):
    """Fold one nvidia-smi line (LOAD_QUERY, then the reasons mask) into gpus {index: what was seen}."""
    index, temperature, clock, clock_max, gen, gen_max, width, mask = (number(f) for f in line.split(","))
    seen = gpus.setdefault(index, {"index": index, "samples": 0, "event_mask": 0})
    seen["samples"] += 1
    for key, value, pick in (
        ("temperature_max", temperature, max),
        ("sm_clock_min", clock, min),
        ("sm_clock_max", clock_max, max),
        ("pcie_gen_min", gen, min),
        ("pcie_gen_max", gen_max, max),
        ("pcie_width_min", width, min),
    ):
        if value is not None:
            seen[key] = pick(seen[key], value) if key in seen else value
    seen["event_mask"] |= mask or 0


class LoadSampler:
    """Reads the node's GPUs every `every` seconds in a thread (the first reading after `every`, once the
    load is on), and once more at the end when none was taken; a reading that fails is kept as the error."""

    def __init__(self, every=0.5, smi="nvidia-smi"):
        self.every, self.smi, self.gpus, self.error = every, smi, {}, None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpu-load", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(15)
        if not self.gpus and self.error is None:
            self.sample()

    def _run(self):
        while not self._stop.wait(self.every):
            self.sample()

    def sample(self):
        for reasons in REASON_FIELDS:
            query = [self.smi, f"--query-gpu={LOAD_QUERY},{reasons}", "--format=csv,noheader,nounits"]
            try:
                run = subprocess.run(query, capture_output=True, text=True, timeout=10, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                self.error = f"nvidia-smi: {exc}"
                return
            if run.returncode == 0:
                break
        else:
            self.error = f"nvidia-smi exited {run.returncode}: {(run.stderr or run.stdout).strip()[:200]}"
            return
        try:
            for line in run.stdout.strip().splitlines():
                merge_sample(self.gpus, line)
        except ValueError as exc:  # a line with another number of fields
            self.error = f"nvidia-smi printed {run.stdout.strip()[:200]!r}: {exc}"

    def report(self):
        return {"host": socket.gethostname(), "gpus": [self.gpus[i] for i in sorted(self.gpus)], "error": self.error}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="", help="all-reduce sizes in bytes (default: by device)")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10, help="timed training steps")
    parser.add_argument("--global-batch", type=int, default=256, help="the batch calibration starts from")
    parser.add_argument("--max-batch", type=int, default=16384, help="calibration stops here")
    parser.add_argument("--min-step-ms", type=float, default=50.0, help="one worker's step must take this long")
    parser.add_argument("--width", type=int, default=0, help="0: by device")
    parser.add_argument("--depth", type=int, default=0, help="0: by device")
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
    every = [torch.empty_like(mine) for _rank in range(world)]
    dist.all_gather(every, mine)
    return [bytes(t.tolist()).rstrip(b"\0").decode() for t in every]


def allreduce_sweep(sizes, iters, warmup, world, device):
    rows = []
    for size in sizes:
        tensor = torch.ones(max(size // 4, 1), dtype=torch.float32, device=device)
        for _step in range(warmup):
            dist.all_reduce(tensor)
        sync(device)
        dist.barrier()
        start = time.perf_counter()
        for _step in range(iters):
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
        del tensor
    return rows


def model(width, depth, device):
    torch.manual_seed(0)
    layers = []
    for _layer in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 1)).to(device)


def parameter_count(width, depth):
    """The parameters of model(width, depth): depth width x width layers with biases, then width -> 1."""
    return depth * (width * width + width) + width + 1


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

    for _step in range(2):
        one_step()
    sync(device)
    start = time.perf_counter()
    for _step in range(steps):
        one_step()
    sync(device)
    return (time.perf_counter() - start) / steps


def calibrate(args, width, depth, device):
    """Rank 0 alone: the smallest batch (doubling from --global-batch) whose step takes --min-step-ms,
    and that step's time. Measured with the timed number of steps, so it is also T1."""
    net = model(width, depth, device)
    batch = args.global_batch
    while True:
        seconds = step_time(net, batch, width, args.steps, device)
        if seconds * 1e3 >= args.min_step_ms or batch * 2 > args.max_batch:
            return batch, seconds
        batch *= 2


def ddp_step_time(width, depth, batch, steps, device, local_rank, use_cuda):
    ids = [local_rank] if use_cuda else None
    net = nn.parallel.DistributedDataParallel(model(width, depth, device), device_ids=ids)
    return slowest(step_time(net, batch, width, steps, device), device)


def main():
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    use_cuda = torch.cuda.is_available()
    kind = "cuda" if use_cuda else "cpu"
    width, depth = args.width or SHAPES[kind][0], args.depth or SHAPES[kind][1]
    backend = "nccl" if use_cuda else "gloo"
    dist.init_process_group(backend, timeout=datetime.timedelta(minutes=10))
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    hosts = gather_hostnames(world, device)

    sizes = [int(s) for s in args.sizes.split(",") if s] or SIZES[kind]
    sweep = allreduce_sweep(sizes, args.iters, args.warmup, world, device)

    # Rank 0 sizes the work and measures T1 while the others wait; then everyone learns the batch.
    batch, t1 = calibrate(args, width, depth, device) if rank == 0 else (0, 0.0)
    shared = torch.tensor([batch, t1], dtype=torch.float64, device=device)
    dist.broadcast(shared, 0)
    batch, t1 = int(shared[0].item()), shared[1].item()
    per_worker = max(batch // world, 1)
    sampler = LoadSampler() if use_cuda and local_rank == 0 else None
    with sampler or contextlib.nullcontext():
        tn = ddp_step_time(width, depth, per_worker, args.steps, device, local_rank, use_cuda)
        tw = ddp_step_time(width, depth, batch, args.steps, device, local_rank, use_cuda)
    under_load = [None] * world
    dist.all_gather_object(under_load, sampler.report() if sampler else None)
    params = parameter_count(width, depth)

    if rank == 0:
        result = {
            "backend": backend,
            "torch": torch.__version__,
            "device": torch.cuda.get_device_name(device) if use_cuda else "cpu",
            "world_size": world,
            "hosts": sorted(set(hosts)),
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "allreduce": sweep,
            # Per host: its GPUs under the DDP steps' load (GPUs only).
            "under_load": {r["host"]: r for r in under_load if r} if use_cuda else None,
            "ddp": {
                "scaling": "strong",
                "global_batch": batch,
                "batch_per_worker": per_worker,
                "min_step_ms": args.min_step_ms,
                "max_batch": args.max_batch,
                "steps": args.steps,
                "width": width,
                "depth": depth,
                "parameters": params,
                "gradient_bytes": params * 4,
                "step_time_1_ms": round(t1 * 1e3, 3),
                "step_time_n_ms": round(tn * 1e3, 3),
                "step_time_weak_ms": round(tw * 1e3, 3),
                "workers": world,
            },
        }
        print(MARKER + json.dumps(result, sort_keys=True), flush=True)
    dist.destroy_process_group()
    # Leave without the C++ static destructors, as the training role's examples do: one rank in a few
    # runs aborted there ("terminate called without an active exception") after its work was done.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
