#!/usr/bin/env python3
"""DeepSpeed ZeRO stage 2 with the optimizer offloaded to the CPU (ZeRO-Offload): the deepspeed job
template's example. A small regression model on synthetic data, so that the run shows the machinery
(the launcher, ZeRO's partitioned gradients, DeepSpeed's CPU Adam op built at install time) rather
than a model. On GPUs it trains there with NCCL; without, on the CPU with gloo (DS_ACCELERATOR=cpu).

Rank 0 prints the nodes, one line per logged step, whether the CPU Adam op came prebuilt, and one
line `GPULAB_RESULT {json}`. With a checkpoint directory (the template's GPULAB_CHECKPOINT_DIR) it saves
every --checkpoint-every steps and at the end (DeepSpeed's own format, one directory per step, `latest`
replaced atomically) and resumes from the latest. On SIGTERM (preemption, the time limit's notice) the
ranks agree to stop at the next check, save, and exit with 143; each step's batch depends on the step
alone, so a resumed run trains what an uninterrupted one would have.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path

import deepspeed
import torch
import torch.distributed as dist
from torch import nn


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=16, help="per rank")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--checkpoint-dir", default=os.environ.get("GPULAB_CHECKPOINT_DIR"))
    parser.add_argument("--checkpoint-every", type=int, default=20, help="steps between checkpoints")
    parser.add_argument("--stop-check-every", type=int, default=10, help="steps between checks for a stop signal")
    return parser.parse_args()


def save(engine, directory, step, rank):
    """DeepSpeed's checkpoint of this step (every rank writes its part), then `latest` pointed at it
    atomically and the older ones removed: a run killed while saving leaves the last whole one named."""
    tag = f"step{step}"
    engine.save_checkpoint(directory, tag=tag, client_state={"step": step}, save_latest=False)
    dist.barrier()
    if rank == 0:
        partial = Path(directory, "latest.partial")
        partial.write_text(tag)
        os.replace(partial, Path(directory, "latest"))
        for old in Path(directory).glob("step*"):
            if old.name != tag:
                shutil.rmtree(old, ignore_errors=True)
    dist.barrier()


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
    weights = torch.randn(args.width, 1, generator=torch.Generator().manual_seed(0))
    start = 0
    if args.checkpoint_dir and Path(args.checkpoint_dir, "latest").exists():
        _path, state = engine.load_checkpoint(args.checkpoint_dir)
        start = state["step"]
        say(f"resumed from step {start} of {args.checkpoint_dir}, restart {os.environ.get('SLURM_RESTART_COUNT', '0')}")
    asked = []
    signal.signal(signal.SIGTERM, lambda *_: asked.append(True))
    flag = torch.zeros(1, device=engine.device)
    started, first, loss, step, stopped = time.monotonic(), None, None, start, False
    while step < args.steps and not stopped:
        step += 1
        generator = torch.Generator().manual_seed(1 + rank + 1000 * step)  # this step's batch, on any run
        x = torch.randn(args.batch_size, args.width, generator=generator).to(engine.device)
        y = x @ weights.to(engine.device)
        loss = nn.functional.mse_loss(engine(x), y)
        engine.backward(loss)
        engine.step()
        first = loss.item() if first is None else first
        if step % 10 == 0 or step == start + 1:
            say(f"step {step} loss {loss.item():.4f}")
        if step % args.stop_check_every == 0:  # every rank at the same steps
            flag.fill_(1.0 if asked else 0.0)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            stopped = bool(flag.item())
        if args.checkpoint_dir and (stopped or step % args.checkpoint_every == 0 or step == args.steps):
            save(engine, args.checkpoint_dir, step, rank)
            say(f"checkpoint step {step} saved to {args.checkpoint_dir}")
    if stopped:
        say(f"stopping at step {step}: asked to stop (SIGTERM)")
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
                "steps": step,
                "trained_steps": step - start,
                "resumed_from_step": start or None,
                "restart_count": int(os.environ.get("SLURM_RESTART_COUNT", "0")),
                "stopped": stopped,
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
    os._exit(143 if stopped else 0)  # stopped early is not success: 128 + SIGTERM


if __name__ == "__main__":
    main()
