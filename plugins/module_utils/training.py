"""The training smoke benchmark: the job that runs it, the result line it prints, and its records.

The benchmark is the training role's digits example under the ddp job template: epochs and
seconds until a fixed test accuracy, on 1 node and on N. It proves a job trains end to end
across nodes; it is not MLPerf.
"""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import Check, failed, passed
from ansible_collections.gpulab.cluster.plugins.module_utils.collective import marked_json

MARKER = "GPULAB_RESULT "
FIELDS = ("world_size", "nodes", "reached", "epochs_to_target", "seconds_to_target", "final_accuracy", "steps")


class SmokeParseError(ValueError):
    pass


def check_name(nodes: int) -> str:
    return f"training_smoke.{nodes}_node{'s' if nodes > 1 else ''}"


# The smoke benchmark's job name, as squeue and sacct show it.
JOB_NAME = "gpulab-smoke"


def submit_command(
    submit: str, script: str, hosts: list[str], output: str, target: float, max_epochs: int, timeout: int
) -> list[str]:
    """gpulab-sbatch's ddp template on exactly these nodes; no checkpoints, so that an earlier run's are
    never resumed. Not `sbatch --wait`: it polls at doubling intervals up to 32 s (a 9 s job took 42 s
    in the lab); the module follows the job itself. The job's time limit is the check's timeout (whole minutes,
    rounded up): a job the check gave up on cannot hold its nodes past it."""
    return [
        submit,
        "ddp",
        f"--nodes={len(hosts)}",
        f"--nodelist={','.join(hosts)}",
        f"--job-name={JOB_NAME}",
        f"--time={-(-timeout // 60)}",
        f"--output={output}",
        "--",
        script,
        "--stop-at-target",
        f"--epochs={max_epochs}",
        f"--target-accuracy={target:g}",
        "--checkpoint-dir=",
    ]


def parse_result(text: str) -> dict[str, Any]:
    """The GPULAB_RESULT line rank 0 printed, among everything torchrun and srun print."""
    try:
        data = marked_json(text, MARKER)
    except KeyError:
        raise SmokeParseError("the job printed no result line (GPULAB_RESULT)") from None
    except json.JSONDecodeError as exc:
        raise SmokeParseError(f"the result line is not JSON ({exc.msg} at char {exc.pos})") from None
    missing = [f for f in FIELDS if f not in data] if isinstance(data, dict) else list(FIELDS)
    if missing:
        raise SmokeParseError(f"the result line lacks {', '.join(missing)}")
    return data


def record(nodes: int, result: dict[str, Any], target: float, max_epochs: int, gpus_per_node: int = 0) -> Check:
    """pass when the run reached the target on the nodes asked for, and, where the nodes declare GPUs, on
    CUDA with a rank per GPU (a run that fell back to the CPU proves nothing about them); else fail."""
    name = check_name(nodes)
    threshold = f"{target:.0%} test accuracy within {max_epochs} epochs"
    ran_on = result["nodes"]
    if len(ran_on) != nodes:
        return failed(
            name,
            f"asked for {nodes} nodes, the job's ranks ran on {len(ran_on)} ({', '.join(ran_on)})",
            threshold=threshold,
            code="SMOKE_NODES",
        )
    if gpus_per_node and result.get("device") != "cuda":
        return failed(
            name,
            f"the nodes declare {gpus_per_node} GPU(s) each, but training ran on {result.get('device') or 'an unknown'}"
            " device: torch sees no CUDA in the job (driver, CUDA build of torch, --gres)",
            value=result.get("device"),
            threshold="cuda",
            code="SMOKE_DEVICE",
        )
    if gpus_per_node and result["world_size"] != nodes * gpus_per_node:
        return failed(
            name,
            f"{result['world_size']} ranks ran, {nodes * gpus_per_node} expected ({gpus_per_node} GPU(s) on each of"
            f" {nodes} node(s))",
            value=result["world_size"],
            threshold=nodes * gpus_per_node,
            code="SMOKE_WORLD_SIZE",
        )
    speed = result.get("samples_per_second")
    about = f"{result['world_size']} ranks on {', '.join(ran_on)}" + (f", {speed:,.0f} samples/s" if speed else "")
    if not result["reached"]:
        return failed(
            name,
            f"stopped at {result['final_accuracy']:.1%} test accuracy after {result['steps']} steps, short of"
            f" {target:.0%} within {max_epochs} epochs ({about})",
            value=result["final_accuracy"],
            threshold=threshold,
            code="SMOKE_TARGET_MISSED",
        )
    return passed(
        name,
        f"{target:.0%} test accuracy after {result['epochs_to_target']} epochs in"
        f" {result['seconds_to_target']:.2f} s of training ({about})",
        value=result["seconds_to_target"],
        unit="s",
        threshold=threshold,
    )
