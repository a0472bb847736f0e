#!/usr/bin/env python3
"""DeepSpeed ZeRO stage 2 with the optimizer offloaded to the CPU (ZeRO-Offload): the deepspeed job
template's example. A small regression model on synthetic data, so that the run shows the machinery
(the launcher, ZeRO's partitioned gradients, DeepSpeed's CPU Adam op built at install time) rather
than a model. On GPUs it trains there with NCCL; without, on the CPU with gloo (DS_ACCELERATOR=cpu).

Rank 0 prints the nodes, one line per logged step, whether the CPU Adam op came prebuilt, and one
line `GPULAB_RESULT {json}`.
"""

import argparse
import json
import os
import socket
import sys
import time

import deepspeed
import torch
import torch.distributed as dist
from torch import nn


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=16, help="per rank")
    parser.add_argument("--width", type=int, default=256)
    return parser.parse_args()


def prebuilt_cpu_adam():
    """Whether DeepSpeed's CPU Adam op was compiled at install time (else it would compile now)."""
    from deepspeed.git_version_info import installed_ops  # pylint: disable=import-outside-toplevel

    return bool(installed_ops.get("cpu_adam"))


def main():
    args = arguments()
    use_cuda = torch.cuda.is_available()
    deepspeed.init_distributed(dist_backend="nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    hosts = [None] * world
    dist.all_gather_object(hosts, socket.gethostname())
    say = print if rank == 0 else (lambda *_a, **_k: None)
    say(f"ranks {world} on nodes {','.join(sorted(set(hosts)))}; CPU Adam prebuilt: {prebuilt_cpu_adam()}")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(args.width, args.width), nn.ReLU(), nn.Linear(args.width, 1))
    config = {
        "train_micro_batch_size_per_gpu": args.batch_size,
        "gradient_accumulation_steps": 1,
        "optimizer": {"type": "Adam", "params": {"lr": 1e-2}},
        "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
        "steps_per_print": 10**9,
    }
    engine, _optimizer, _loader, _scheduler = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=config
    )
    generator = torch.Generator().manual_seed(1 + rank)
    weights = torch.randn(args.width, 1, generator=torch.Generator().manual_seed(0))
    started, first, loss = time.monotonic(), None, None
    for step in range(1, args.steps + 1):
        x = torch.randn(args.batch_size, args.width, generator=generator).to(engine.device)
        y = x @ weights.to(engine.device)
        loss = nn.functional.mse_loss(engine(x), y)
        engine.backward(loss)
        engine.step()
        first = loss.item() if first is None else first
        if step % 10 == 0 or step == 1:
            say(f"step {step} loss {loss.item():.4f}")
    seconds = time.monotonic() - started
    offloaded = getattr(engine.optimizer, "optimizer", None)  # ZeRO's wrapper holds the real optimizer
    say(
        "GPULAB_RESULT "
        + json.dumps(
            {
                "world_size": world,
                "nodes": sorted(set(hosts)),
                "zero_stage": engine.zero_optimization_stage(),
                "offload": type(offloaded).__name__ if offloaded is not None else None,
                "cpu_adam_prebuilt": prebuilt_cpu_adam(),
                "first_loss": round(first, 4),
                "last_loss": round(loss.item(), 4),
                "steps": args.steps,
                "seconds": round(seconds, 3),
                "deepspeed": deepspeed.__version__,
                "torch": torch.__version__,
                "accelerator": os.environ.get("DS_ACCELERATOR", "auto"),
            }
        )
    )
    dist.barrier()
    dist.destroy_process_group()
    # Leave without the C++ static destructors: in the lab's first 2-node job after a build, one
    # rank aborted there ("terminate called without an active exception"), after its work was
    # done and reported, failing the job.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
