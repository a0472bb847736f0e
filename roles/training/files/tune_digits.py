#!/usr/bin/env python3
"""Ray Tune over the learning rate of the digits smoke benchmark's model (train_digits.py).

Each trial trains the benchmark's classifier in one process for a few epochs and reports its test
accuracy after every epoch; Tune keeps the best. Trials are spread over the Ray cluster's nodes,
one per free CPU slot (--cpus-per-trial). Run it where RAY_ADDRESS names a cluster: inside the ray
job template (gpulab-sbatch ray), or against the standing cluster (RAY_ADDRESS=HEAD:6379).

At the end it prints one line `GPULAB_RESULT {json}`: the nodes Ray saw, the hosts the trials ran on,
each trial's learning rate and accuracy, and the best trial.
"""

import argparse
import json
import os
import socket
import sys
import tempfile

import ray
from ray import tune

HERE = os.path.dirname(os.path.abspath(__file__))


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lrs", default="0.01,0.03,0.1,0.3", help="learning rates to try, comma-separated")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--cpus-per-trial", type=float, default=1)
    parser.add_argument("--data", default=os.environ.get("GPULAB_DATA"), help="as train_digits.py's --data")
    parser.add_argument(
        "--storage", default=os.environ.get("GPULAB_CHECKPOINT_DIR"), help="Tune's results (shared); default a temp dir"
    )
    return parser.parse_args()


def trial(config):
    """One learning rate: the benchmark's model, plain SGD on one process, accuracy after each epoch."""
    sys.path.insert(0, config["jobs_dir"])
    import torch  # pylint: disable=import-outside-toplevel
    from torch import nn  # pylint: disable=import-outside-toplevel
    from train_digits import load  # pylint: disable=import-outside-toplevel

    torch.manual_seed(0)
    torch.set_num_threads(1)
    train, test = load(config["data"])
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.SGD(net.parameters(), lr=config["lr"], momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    batches = torch.utils.data.DataLoader(train, batch_size=32, shuffle=True)
    for epoch in range(1, config["epochs"] + 1):
        net.train()
        for x, y in batches:
            optimizer.zero_grad()
            loss_fn(net(x), y).backward()
            optimizer.step()
        net.eval()
        with torch.no_grad():
            x, y = test.tensors
            acc = (net(x).argmax(1) == y).float().mean().item()
        tune.report({"accuracy": acc, "epoch": epoch, "host": socket.gethostname()})


def main():
    args = arguments()
    ray.init()  # RAY_ADDRESS
    nodes = sorted(n["NodeManagerHostname"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0)
    print(f"tune: Ray {ray.__version__}, {len(nodes)} nodes with CPUs: {', '.join(nodes)}", flush=True)
    storage = args.storage or tempfile.mkdtemp(prefix="gpulab-tune-")
    space = {
        "lr": tune.grid_search([float(lr) for lr in args.lrs.split(",")]),
        "epochs": args.epochs,
        "data": args.data,
        "jobs_dir": HERE,
    }
    tuner = tune.Tuner(
        tune.with_resources(trial, {"cpu": args.cpus_per_trial}),
        param_space=space,
        tune_config=tune.TuneConfig(metric="accuracy", mode="max"),
        run_config=tune.RunConfig(name="tune_digits", storage_path=os.path.abspath(storage), verbose=0),
    )
    results = tuner.fit()
    trials = [
        {
            "lr": r.config["lr"],
            "accuracy": r.metrics.get("accuracy"),
            "host": r.metrics.get("host"),
            "error": str(r.error),
        }
        if r.error
        else {"lr": r.config["lr"], "accuracy": r.metrics["accuracy"], "host": r.metrics["host"]}
        for r in results
    ]
    best = results.get_best_result()
    summary = {
        "ray_version": ray.__version__,
        "nodes": nodes,
        "trial_hosts": sorted({t["host"] for t in trials if t.get("host")}),
        "trials": trials,
        "best": {"lr": best.config["lr"], "accuracy": best.metrics["accuracy"]},
        "errors": results.num_errors,
    }
    print("GPULAB_RESULT " + json.dumps(summary), flush=True)
    return 1 if results.num_errors else 0


if __name__ == "__main__":
    sys.exit(main())
