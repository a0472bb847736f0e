"""The collective benchmark's command line, its result, and the scaling verdict.

The worker (roles/validation/files/collective_bench.py) runs under torchrun on every node, started
by Ansible on each node (static rendezvous) or by one `srun` (c10d rendezvous); rank 0 prints the
result line this module reads. Strong scaling: efficiency = T1 / (N * TN); weak scaling: T1 / TW.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils import nvidia_smi as smi
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
MARKER = "GPULAB_BENCH_RESULT "


class BenchParseError(ValueError):
    """Output that is missing, truncated or not the worker's format."""


def build_command(
    python: str,
    script: str,
    nnodes: int,
    node_rank: int,
    nproc_per_node: int,
    master_addr: str,
    master_port: int,
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
        *worker_args,
    ]


def build_srun_command(
    python: str,
    script: str,
    hosts: list[str],
    nproc_per_node: int,
    master_addr: str,
    master_port: int,
    worker_args: list[str],
    gres: str | None = None,
) -> list[str]:
    """One Slurm job step, one torchrun per node, meeting at a c10d rendezvous on master_addr:
    the way users run training. --exclusive and --mem=0: the benchmark gets every core and all the
    memory of its nodes."""
    return [
        "srun",
        f"--nodes={len(hosts)}",
        "--ntasks-per-node=1",
        f"--nodelist={','.join(hosts)}",
        "--exclusive",
        "--mem=0",
        "--job-name=gpulab-bench",
        "--kill-on-bad-exit=1",
        *([f"--gres={gres}"] if gres else []),
        python,
        "-m",
        "torch.distributed.run",
        f"--nnodes={len(hosts)}",
        f"--nproc-per-node={nproc_per_node}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={master_addr}:{master_port}",
        "--rdzv-id=gpulab-bench",
        script,
        *worker_args,
    ]


def marked_json(text: str, marker: str) -> Any:
    """The JSON value after the last `marker` in a job's output, among everything else torchrun and
    srun print (another rank's output may follow it on the same line). Raises KeyError when the
    marker is absent and json.JSONDecodeError when what follows is not JSON."""
    if marker not in text:
        raise KeyError(marker)
    return json.JSONDecoder().raw_decode(text.rsplit(marker, 1)[1])[0]


def parse_output(text: str) -> dict[str, Any]:
    """The result rank 0 printed (GPULAB_BENCH_RESULT)."""
    try:
        data = marked_json(text, MARKER)
    except KeyError:
        raise BenchParseError("the benchmark printed no result line (GPULAB_BENCH_RESULT)") from None
    except json.JSONDecodeError as exc:
        raise BenchParseError(f"benchmark result is not JSON ({exc.msg} at char {exc.pos})") from None
    return _checked(data)


RANK_PREFIX = re.compile(r"^\[rank\d+\]:\s?")
# torchrun's table of the first worker that failed: "Root Cause (first observed failure):" then
# "  host : gpu2", "  rank : 1 (local_rank: 0)", "  exitcode : -10 (pid: 8500)" among other fields.
ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\):(.*?)(?:={10,}|$)", re.S)
ROOT_FIELD = re.compile(r"^\s*(host|rank|exitcode)\s*:\s*(.+?)\s*$", re.M)


# What a process prints as it aborts: C++'s "terminate called after throwing an instance of 'gloo::IoException'"
# then "  what():  [pair.cc:589] Read error ...", or CPython's "Fatal Python error: ...".
ABORT_LINE = ("terminate called", "what():", "Fatal Python error:")


def root_cause(text: str) -> dict[str, str]:
    """torchrun's first observed failure ({"host", "rank", "exitcode"}); empty when it printed none."""
    for block in ROOT_CAUSE.findall(text):
        fields = dict(ROOT_FIELD.findall(block))
        if fields:
            return fields
    return {}


def ended_by_signal(text: str) -> bool:
    """Whether the first worker that failed was ended by a signal (torchrun's negative exit code):
    an abort, a kill, never a Python exception the worker raised."""
    return root_cause(text).get("exitcode", "").startswith("-")


def failure_summary(text: str, limit: int = 600) -> str:
    """What a failed run said that matters: Slurm's error lines (an OOM kill, a refused allocation), each
    Python exception line (without torch's "[rankN]: " prefix), what an aborting process said, and
    torchrun's root cause (the first worker that failed: its node, rank and exit code, a negative one
    being the signal that ended it); else the output's end."""
    fields = root_cause(text)
    where = f"rank {fields.get('rank', '?')} on {fields.get('host', '?')}"
    causes = [f"first failure: {where}, exit code {fields.get('exitcode', '?')}"] if fields else []
    lines = [RANK_PREFIX.sub("", line) for line in text.splitlines()]
    wanted = [
        line.strip()
        for line in lines
        if line.lstrip().startswith(("srun: error:", "slurmstepd: error:", *ABORT_LINE))
        or (line[:1].isalpha() and ("Error: " in line or "Exception: " in line))
    ]
    summary = "; ".join(dict.fromkeys(wanted + causes)) or text.strip()[-limit:]
    return summary[:limit]


def parse_result(text: str) -> dict[str, Any]:
    """A result as JSON text (the file the worker wrote before it printed its result line)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchParseError(f"benchmark result is not JSON ({exc.msg} at char {exc.pos})") from None
    return _checked(data)


def _checked(data: Any) -> dict[str, Any]:
    """The decoded result, refused unless it has what evaluate() reads."""
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


def _busbw(
    result: dict[str, Any], min_busbw_gbs: float | None, expected_busbw: float | None, pass_ratio: float
) -> Check:
    """Bus bandwidth at the largest size, held to min_busbw_gbs, else (NCCL across nodes only) to the
    plan's expected bandwidth x pass_ratio; gloo on CPU is reported, not judged, unless asked."""
    largest = max(result["allreduce"], key=lambda row: row["bytes"])
    what = f"all-reduce bus bandwidth at {largest['bytes']} bytes"
    across_nodes = len(result.get("hosts") or []) > 1
    if min_busbw_gbs is None and expected_busbw is not None and result["backend"] == "nccl" and across_nodes:
        min_busbw_gbs = round(expected_busbw * pass_ratio, 3)
        what += f" (expected {expected_busbw:g} GB/s from the link speed)"
    if min_busbw_gbs is None:
        return passed(
            "collective.busbw", f"{what}: {largest['busbw_gbs']:g} GB/s", value=largest["busbw_gbs"], unit="GB/s"
        )
    return at_least("collective.busbw", largest["busbw_gbs"], min_busbw_gbs, "GB/s", what)


def _step_time(ddp: dict[str, Any]) -> Check | None:
    """Whether one worker's step was long enough to measure scaling on (results before calibration: None)."""
    if "min_step_ms" not in ddp:
        return None
    t1, floor = float(ddp["step_time_1_ms"]), float(ddp["min_step_ms"])
    work = f"batch {ddp['global_batch']}, {ddp.get('depth')} x {ddp.get('width')} model"
    if t1 >= floor:
        return passed(
            "collective.step_time",
            f"one worker's step takes {t1:g} ms ({work}): long enough to measure",
            value=t1,
            threshold=floor,
            unit="ms",
        )
    return warned(
        "collective.step_time",
        f"one worker's step takes {t1:g} ms even at batch {ddp['global_batch']} (the most calibration tries): "
        f"launch overhead weighs on the scaling figures; raise max_batch",
        value=t1,
        threshold=floor,
        unit="ms",
        code="BENCH_SHORT_STEP",
    )


def _weak(ddp: dict[str, Any]) -> Check | None:
    """Weak scaling, T1 / TW with each worker on the one-worker batch: information, not judged."""
    if "step_time_weak_ms" not in ddp:
        return None
    workers, t1, tw = int(ddp["workers"]), float(ddp["step_time_1_ms"]), float(ddp["step_time_weak_ms"])
    if workers < 2:
        return unavailable("scaling_weak", "one worker: no scaling to measure")
    if t1 <= 0 or tw <= 0:
        return failed("scaling_weak", f"step times are not positive (T1 {t1:g} ms, TW {tw:g} ms)", code="BENCH_TIMES")
    value = t1 / tw
    return passed(
        "scaling_weak",
        f"{value:.0%} across {workers} workers (T1 {t1:g} ms, each of {workers} workers on the same batch "
        f"{tw:g} ms): weak scaling, shown for information; the verdict uses strong scaling",
        value=round(value, 3),
    )


def _gpu_under_load(host: str, gpu: dict[str, Any]) -> list[Check]:
    """One GPU as it ran the DDP steps: the doctor compares each value with the baseline's."""
    name = f"load.{host}.gpu{gpu['index']}"
    seen = f"in {gpu['samples']} reading(s) during the DDP steps"
    records = []
    if gpu.get("temperature_max") is not None:
        records.append(
            passed(
                f"{name}.temperature",
                f"hottest {gpu['temperature_max']} C {seen}",
                value=gpu["temperature_max"],
                unit="C",
            )
        )
    if gpu.get("sm_clock_min") is not None:
        top = f" of {gpu['sm_clock_max']} MHz" if gpu.get("sm_clock_max") else ""
        records.append(
            passed(
                f"{name}.sm_clock",
                f"SM clock at least {gpu['sm_clock_min']} MHz{top} {seen}",
                value=gpu["sm_clock_min"],
                threshold=gpu.get("sm_clock_max"),
                unit="MHz",
            )
        )
    if gpu.get("pcie_width_min") is not None:
        records.append(
            passed(f"{name}.pcie_width", f"PCIe x{gpu['pcie_width_min']} under load", value=gpu["pcie_width_min"])
        )
    gen, top = gpu.get("pcie_gen_min"), gpu.get("pcie_gen_max")
    if gen is not None and top is not None and gen < top:
        records.append(
            warned(
                f"{name}.pcie_gen",
                f"PCIe gen {gen} under load; the card and slot allow gen {top}: the BIOS's PCIe speed, the riser",
                value=gen,
                threshold=top,
                code="PCIE_GEN",
            )
        )
    elif gen is not None:
        records.append(passed(f"{name}.pcie_gen", f"PCIe gen {gen} under load", value=gen, threshold=top))
    reasons = smi.throttle_reasons(gpu.get("event_mask"))
    slowed = [r for r in reasons if r in smi.THROTTLE_FAIL | smi.THROTTLE_WARN]
    if slowed:
        records.append(
            warned(
                f"{name}.clock_events",
                f"clocks slowed under load by {', '.join(slowed)}: airflow, the room, the PSU (`nvidia-smi -q -d "
                "PERFORMANCE`)",
                value=reasons,
                code="GPU_HW_SLOWDOWN",
            )
        )
    else:
        said = ", ".join(reasons) or "none"
        records.append(passed(f"{name}.clock_events", f"clock event reasons under load: {said}", value=reasons))
    return records


def under_load(result: dict[str, Any]) -> list[Check]:
    """Each host's GPUs as they ran the DDP steps; nothing on CPU (gloo), where there is no GPU to read."""
    records = []
    for host, read in sorted((result.get("under_load") or {}).items()):
        if read.get("error") and not read.get("gpus"):
            records.append(unavailable(f"load.{host}", f"the GPUs could not be read under load: {read['error']}"))
        for gpu in read.get("gpus") or []:
            records += _gpu_under_load(host, gpu)
    return records


def evaluate(
    result: dict[str, Any],
    healthy: float = HEALTHY,
    acceptable: float = ACCEPTABLE,
    min_busbw_gbs: float | None = None,
    expected_busbw: float | None = None,
    pass_ratio: float = 0.9,
) -> list[Check]:
    records = [
        passed(
            "collective.run",
            f"{result['backend']} all-reduce and DDP ran across {result['world_size']} workers "
            f"on {', '.join(result.get('hosts') or []) or 'unknown hosts'}"
            + (f" (Slurm job {result['slurm_job_id']})" if result.get("slurm_job_id") else ""),
            value=result["world_size"],
        )
    ]
    if result["allreduce"] and int(result["world_size"]) < 2:
        records.append(unavailable("collective.busbw", "one worker: an all-reduce moves no data between workers"))
    elif result["allreduce"]:
        records.append(_busbw(result, min_busbw_gbs, expected_busbw, pass_ratio))
    ddp = result["ddp"]
    records += [r for r in (_step_time(ddp), _weak(ddp)) if r]
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
    return records + under_load(result)
