"""The collective benchmark's command line, its JSON result, and the scaling verdict.

The worker (roles/validation/files/collective_bench.py) runs under torchrun on every node; rank 0
writes the result this module reads. Scaling is strong scaling: efficiency = T1 / (N * TN).
"""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import (
    Check,
    at_least,
    failed,
    passed,
    unavailable,
    warned,
)

# The handbook's bands: above 90 % healthy, 70-90 % look at the network, below 70 % at I/O or synchronisation.
HEALTHY = 0.9
ACCEPTABLE = 0.7


class BenchParseError(ValueError):
    """A result file that is missing, truncated or not the worker's format."""


def build_command(
    python: str,
    script: str,
    nnodes: int,
    node_rank: int,
    nproc_per_node: int,
    master_addr: str,
    master_port: int,
    output: str,
    worker_args: list[str],
) -> list[str]:
    """torchrun with a static rendezvous: every node is told the same master and its own rank."""
    return [
        python,
        "-m",
        "torch.distributed.run",
        f"--nnodes={nnodes}",
        f"--node-rank={node_rank}",
        f"--nproc-per-node={nproc_per_node}",
        f"--master-addr={master_addr}",
        f"--master-port={master_port}",
        script,
        f"--output={output}",
        *worker_args,
    ]


def parse_result(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchParseError(f"benchmark result is not JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise BenchParseError("benchmark result is not a JSON object")
    missing = [k for k in ("backend", "world_size", "allreduce", "ddp") if k not in data]
    if missing:
        raise BenchParseError(f"benchmark result lacks {', '.join(missing)}")
    ddp = data["ddp"]
    if not isinstance(ddp, dict) or not {"step_time_1_ms", "step_time_n_ms", "workers"} <= ddp.keys():
        raise BenchParseError("benchmark result's ddp entry lacks step_time_1_ms, step_time_n_ms or workers")
    return data


def efficiency(step_time_1: float, step_time_n: float, workers: int) -> float | None:
    """Strong-scaling efficiency T1 / (N * TN); None when it cannot be computed."""
    if workers < 1 or step_time_n <= 0 or step_time_1 <= 0:
        return None
    return step_time_1 / (workers * step_time_n)


def evaluate(
    result: dict[str, Any],
    healthy: float = HEALTHY,
    acceptable: float = ACCEPTABLE,
    min_busbw_gbs: float | None = None,
) -> list[Check]:
    records = [
        passed(
            "collective.run",
            f"{result['backend']} all-reduce and DDP ran across {result['world_size']} workers "
            f"on {', '.join(result.get('hosts') or []) or 'unknown hosts'}",
            value=result["world_size"],
        )
    ]
    sweep = result["allreduce"]
    if sweep and int(result["world_size"]) < 2:
        records.append(unavailable("collective.busbw", "one worker: an all-reduce moves no data between workers"))
    elif sweep:
        largest = max(sweep, key=lambda row: row["bytes"])
        what = f"all-reduce bus bandwidth at {largest['bytes']} bytes"
        if min_busbw_gbs is None:
            records.append(
                passed(
                    "collective.busbw",
                    f"{what}: {largest['busbw_gbs']:g} GB/s",
                    value=largest["busbw_gbs"],
                    unit="GB/s",
                )
            )
        else:
            records.append(at_least("collective.busbw", largest["busbw_gbs"], min_busbw_gbs, "GB/s", what))
    ddp = result["ddp"]
    workers = int(ddp["workers"])
    value = efficiency(float(ddp["step_time_1_ms"]), float(ddp["step_time_n_ms"]), workers)
    times = f"T1 {ddp['step_time_1_ms']:g} ms, T{workers} {ddp['step_time_n_ms']:g} ms (strong scaling)"
    if workers < 2:
        records.append(
            unavailable("scaling_efficiency", f"one worker: no scaling to measure (step {ddp['step_time_1_ms']:g} ms)")
        )
    elif value is None:
        records.append(failed("scaling_efficiency", f"step times are not positive ({times})", code="BENCH_TIMES"))
    elif value >= healthy:
        records.append(
            passed(
                "scaling_efficiency",
                f"{value:.0%} across {workers} workers: healthy ({times})",
                value=round(value, 3),
                threshold=healthy,
            )
        )
    elif value >= acceptable:
        records.append(
            warned(
                "scaling_efficiency",
                f"{value:.0%} across {workers} workers ({times}): look at the network - "
                "bandwidth between nodes, NCCL falling back to sockets, MTU and PFC",
                value=round(value, 3),
                threshold=healthy,
                code="SCALING_NETWORK",
            )
        )
    else:
        records.append(
            failed(
                "scaling_efficiency",
                f"{value:.0%} across {workers} workers ({times}): look at I/O and synchronisation - "
                "data loading, stragglers, CPU contention, small per-worker batches",
                value=round(value, 3),
                threshold=acceptable,
                code="SCALING_POOR",
            )
        )
    return records
