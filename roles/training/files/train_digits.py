#!/usr/bin/env python3
"""Data-parallel training of a small classifier on scikit-learn's digits (8x8 images, 10 classes).

It is the DDP job template's example and gpulab's training smoke benchmark: epochs and seconds
until the test accuracy reaches a fixed target, on 1 and on N nodes. It shows that a job trains
across nodes end to end (launcher, rendezvous, collectives, data loading, checkpoints); it is
not MLPerf and says nothing about a GPU's speed on real models.

Run under torchrun (the ddp template does; the GPULAB_* variables it sets are the defaults of
the options below). Rank 0 prints one line per epoch,
    epoch 3 step 69 loss 0.4123 accuracy 0.9361
and at the end one line `GPULAB_RESULT {json}`. With --checkpoint-dir it saves after every epoch
(latest.pt, replaced atomically) and a later run with the same directory resumes from it.

Preemption: on SIGTERM (Slurm's notice to a preempted job, or the template's --signal before the time
limit) the ranks agree to stop at the next check (one all-reduce of a stop flag every few steps), rank 0
saves the step, the epoch and the batch within it, and every rank exits with 143. The requeued job resumes
at that batch: no step is trained twice or skipped.
"""

import argparse
import itertools
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    env = os.environ.get
    parser.add_argument(
        "--data", default=env("GPULAB_DATA"), help="an .npz with arrays x and y, or a directory holding digits.npz"
    )
    parser.add_argument("--epochs", type=int, default=20, help="stop after this epoch (counted across resumes)")
    parser.add_argument("--target-accuracy", type=float, default=0.95)
    parser.add_argument("--stop-at-target", action="store_true", help="stop once the target is reached (benchmark)")
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument(
        "--checkpoint-dir", default=env("GPULAB_CHECKPOINT_DIR"), help="save after each epoch, resume from the latest"
    )
    parser.add_argument("--num-workers", type=int, default=int(env("GPULAB_NUM_WORKERS", "0")), help="per rank")
    parser.add_argument("--prefetch-factor", type=int, default=int(env("GPULAB_PREFETCH_FACTOR", "2")))
    parser.add_argument("--stop-check-every", type=int, default=10, help="steps between checks for a stop signal")
    return parser.parse_args()


def load(data):
    """(train, test) as float32 pixels in [0, 1] and int64 labels, split 80/20 the same way everywhere."""
    if data:
        path = Path(data) / "digits.npz" if Path(data).is_dir() else Path(data)
        with np.load(path) as arrays:
            x, y = arrays["x"], arrays["y"]
    else:
        from sklearn.datasets import load_digits  # pylint: disable=import-outside-toplevel

        digits = load_digits()
        x, y = digits.data, digits.target
    order = np.random.default_rng(0).permutation(len(y))
    x, y = torch.from_numpy((x[order] / 16.0).astype(np.float32)), torch.from_numpy(y[order].astype(np.int64))
    split = int(len(y) * 0.8)
    return TensorDataset(x[:split], y[:split]), TensorDataset(x[split:], y[split:])


def accuracy(model, data, device):
    model.eval()
    with torch.no_grad():
        x, y = data.tensors
        hits = (model(x.to(device)).argmax(1) == y.to(device)).sum().item()
    model.train()
    return hits / len(y)


class Run:
    """Where this rank runs: the process group joined, the device, every rank's host."""

    def __init__(self):
        self.use_cuda = torch.cuda.is_available()
        dist.init_process_group("nccl" if self.use_cuda else "gloo")
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.local_rank = int(os.environ.get("LOCAL_RANK", 0))
        self.device = torch.device("cuda", self.local_rank) if self.use_cuda else torch.device("cpu")
        if self.use_cuda:
            torch.cuda.set_device(self.device)
        hosts = [None] * self.world
        dist.all_gather_object(hosts, socket.gethostname())
        self.nodes = sorted(set(hosts))

    def say(self, text):
        """Print on rank 0 only."""
        if self.rank == 0:
            print(text)


class ResumableSampler(DistributedSampler):
    """DistributedSampler that can start an epoch part way: `skip` of this rank's samples already trained."""

    skip = 0

    def __iter__(self):
        return itertools.islice(super().__iter__(), self.skip, None)

    def __len__(self):
        return super().__len__() - self.skip


class StopFlag:
    """Set by SIGTERM; `agreed` asks every rank (an all-reduce), so that all of them stop at the same step."""

    def __init__(self, device):
        self.local = False
        self.flag = torch.zeros(1, device=device)
        signal.signal(signal.SIGTERM, self._set)

    def _set(self, *_):
        self.local = True

    def agreed(self):
        self.flag.fill_(1.0 if self.local else 0.0)
        dist.all_reduce(self.flag, op=dist.ReduceOp.MAX)
        return bool(self.flag.item())


def loader_for(train, args, run):
    sampler = ResumableSampler(train, num_replicas=run.world, rank=run.rank, shuffle=True, seed=0)
    loader = DataLoader(
        train,
        batch_size=args.batch_size,
        sampler=sampler,
        num_workers=args.num_workers,
        prefetch_factor=args.prefetch_factor if args.num_workers else None,
        pin_memory=run.use_cuda,
        persistent_workers=args.num_workers > 0,
    )
    return sampler, loader


def resume(saved, net, optimizer, run):
    """(epoch, batch, step, the step resumed from or None) from the latest checkpoint, if there is one:
    `epoch` epochs and `batch` batches of the next one are done."""
    if not (saved and saved.exists()):
        return 0, 0, 0, None
    state = torch.load(saved, map_location=run.device, weights_only=True)
    net.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    batch, restarts = state.get("batch", 0), os.environ.get("SLURM_RESTART_COUNT", "0")
    run.say(
        f"resumed from step {state['step']} (epoch {state['epoch']} done, {batch} batches into the next) of {saved}, "
        f"restart {restarts}"
    )
    return state["epoch"], batch, state["step"], state["step"]


def save(saved, state):
    """Replace the checkpoint atomically: written whole to a temporary file and synced before it is renamed
    over the last one, so that a job killed while saving (even with SIGKILL) leaves the previous one whole."""
    saved.parent.mkdir(parents=True, exist_ok=True)
    partial = saved.with_suffix(".partial")
    with open(partial, "wb") as out:
        torch.save(state, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, saved)
    directory = os.open(saved.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a crash
    finally:
        os.close(directory)


def train_epoch(model, loader, optimizer, loss_fn, device, stop, every):
    """One pass over this rank's share, or until every rank agrees to stop: (steps taken, [loss sum, samples]
    summed over every rank, stopped)."""
    # On the rank's device: NCCL reduces only GPU tensors, and no per-step .item() waits for the GPU.
    steps, totals = 0, torch.zeros(2, dtype=torch.float64, device=device)
    for x, y in loader:
        # Before the step: a stop leaves no step half done. Every rank checks at the same steps.
        if steps % every == 0 and steps and stop.agreed():
            dist.all_reduce(totals)
            return steps, totals, True
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        steps += 1
        totals[0] += loss.detach().double() * len(y)
        totals[1] += len(y)
    dist.all_reduce(totals)
    return steps, totals, stop.agreed()


def main():
    args = arguments()
    run = Run()
    backend = f"{'cuda' if run.use_cuda else 'cpu'}, {dist.get_backend()}"
    run.say(f"ranks {run.world} on nodes {','.join(run.nodes)} ({backend})")

    train, test = load(args.data)
    sampler, loader = loader_for(train, args, run)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(run.device)
    model = DistributedDataParallel(net, device_ids=[run.local_rank] if run.use_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    saved = Path(args.checkpoint_dir, "latest.pt") if args.checkpoint_dir else None
    stop = StopFlag(run.device)  # before anything long: a SIGTERM from here on is a stop, not the end
    start_epoch, batch, step, resumed = resume(saved, net, optimizer, run)
    started, reached, samples, acc, first_step, stopped = time.monotonic(), None, 0, 0.0, step, False
    for epoch in range(start_epoch, args.epochs):
        sampler.set_epoch(epoch)
        sampler.skip = batch * args.batch_size if epoch == start_epoch else 0
        steps, totals, stopped = train_epoch(model, loader, optimizer, loss_fn, run.device, stop, args.stop_check_every)
        step += steps
        samples += int(totals[1])
        batch = (batch if epoch == start_epoch else 0) + steps
        done = batch * args.batch_size >= sampler.num_samples  # this epoch fully trained
        if done:
            acc = accuracy(net, test, run.device)
            run.say(f"epoch {epoch + 1} step {step} loss {totals[0] / totals[1]:.4f} accuracy {acc:.4f}")
        if saved and run.rank == 0:
            position = {"epoch": epoch + 1, "batch": 0} if done else {"epoch": epoch, "batch": batch}
            save(saved, {"model": net.state_dict(), "optimizer": optimizer.state_dict(), "step": step, **position})
            run.say(f"checkpoint step {step} saved to {saved}")
        if stopped:
            run.say(f"stopping at step {step} (epoch {epoch + 1}, batch {batch}): asked to stop (SIGTERM)")
            break
        if reached is None and acc >= args.target_accuracy:
            reached = (epoch + 1, time.monotonic() - started)
            if args.stop_at_target:
                break
    seconds = time.monotonic() - started
    result = {
        "world_size": run.world,
        "nodes": run.nodes,
        "device": "cuda" if run.use_cuda else "cpu",
        "target_accuracy": args.target_accuracy,
        "reached": reached is not None,
        "epochs_to_target": reached[0] if reached else None,
        "seconds_to_target": round(reached[1], 3) if reached else None,
        "final_accuracy": round(acc, 4),
        "steps": step,
        "trained_steps": step - first_step,
        "resumed_from_step": resumed,
        "restart_count": int(os.environ.get("SLURM_RESTART_COUNT", "0")),
        "stopped": stopped,
        "seconds": round(seconds, 3),
        "samples_per_second": round(samples / seconds, 1) if seconds > 0 else None,
        # Evaluation and checkpoints included: a job's pace, not a kernel benchmark.
        "step_ms": round(1000 * seconds / (step - first_step), 3) if step > first_step else None,
        "torch": torch.__version__,
    }
    run.say("GPULAB_RESULT " + json.dumps(result))
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
