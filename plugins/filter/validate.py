"""Filters of the validation role: its settings checked before anything runs, and the results gathered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.gpulab.cluster.plugins.filter.host_facts import gpu_count_problem
from ansible_collections.gpulab.cluster.plugins.filter.slurm import slurm_controller_host
from ansible_collections.gpulab.cluster.plugins.module_utils import baseline, cost, report
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import FAIL_ON_CHOICES as FAIL_ON
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import as_number as _number
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import blocking_findings
from ansible_collections.gpulab.cluster.plugins.module_utils.nvidia_smi import PCIE_WIDTHS

PREFIX = "validation_"
OLD_PREFIX = "validate_"  # the prefix while the settings lived in playbooks/vars/validate.yml
# Settings of the benchmark's own torch, gone since it runs in the training environment: where each went.
MOVED = {
    "validation_torch_spec": "training_versions.pytorch (or gpulab_versions.pytorch)",
    "validation_wheel_dir": "training_wheel_dir",
    "validation_pip_index_url": "training_pip_index_url",
}


def _retired(settings: Mapping[str, Any]) -> list[str]:
    """Settings no longer read, each named with what replaced it."""
    return [
        f"{name} is no longer read: the setting is {PREFIX}{name[len(OLD_PREFIX) :]} now"
        for name in sorted(settings)
        if name.startswith(OLD_PREFIX)
    ] + [
        f"{name} is no longer read: the benchmark runs with the training environment's torch; set {MOVED[name]}"
        for name in sorted(settings)
        if name in MOVED
    ]


def validate_problems(
    settings: Mapping[str, Any], known_hosts: Iterable[str], gpu_counts: Mapping[str, Any]
) -> list[str]:
    """Problems with the validation_* settings and the GPU counts they hold compute nodes to.

    settings: variable name -> value for every validation_* variable (and any validate_* one, the
    old prefix, which is refused with its new name); gpu_counts: compute host -> gpulab_gpu_count
    (None if unset), so its keys are the compute nodes.
    """
    known = set(known_hosts)
    problems = _retired(settings)
    settings = {k[len(PREFIX) :]: v for k, v in settings.items() if k.startswith(PREFIX)}
    for name in ("net_hosts", "bench_hosts"):
        hosts = settings.get(name) or []
        if isinstance(hosts, str) or not isinstance(hosts, Iterable):
            problems.append(f"validation_{name} must be a list of inventory hosts, got {hosts!r}")
            continue
        unknown = sorted(str(h) for h in hosts if h not in known)
        if unknown:
            problems.append(f"validation_{name} names host(s) not in the inventory: {', '.join(unknown)}")
        elif name == "bench_hosts" and (not_compute := sorted(str(h) for h in hosts if h not in gpu_counts)):
            problems.append(f"validation_bench_hosts names host(s) outside the compute group: {', '.join(not_compute)}")

    def positive(name: str, required: bool = True, upper: float | None = None) -> None:
        value = settings.get(name)
        if value is None and not required:
            return
        number = _number(value)
        if number is None or number <= 0 or (upper is not None and number > upper):
            bound = f"in (0, {upper:g}]" if upper is not None else "greater than 0"
            problems.append(f"validation_{name} must be {bound}, got {value!r}")

    positive("net_min_ratio", upper=1)
    positive("net_min_gbps", required=False)
    positive("net_line_rate_gbps", required=False)
    positive("net_streams")
    positive("net_duration")
    positive("bench_global_batch")
    positive("bench_min_busbw_gbs", required=False)
    positive("efficiency_healthy", upper=1)
    positive("efficiency_acceptable", upper=1)
    positive("smi_timeout", required=False)
    positive("clock_offset_max_ms", required=False)
    positive("idle_gpu_minutes", required=False)
    healthy, acceptable = _number(settings.get("efficiency_healthy")), _number(settings.get("efficiency_acceptable"))
    if healthy is not None and acceptable is not None and acceptable > healthy:
        problems.append(
            f"validation_efficiency_acceptable ({acceptable:g}) must not exceed "
            f"validation_efficiency_healthy ({healthy:g})"
        )
    line_rate = _number(settings.get("net_line_rate_gbps"))
    if line_rate and line_rate > 0:
        for name, value, limit, unit in (
            ("net_min_gbps", settings.get("net_min_gbps"), line_rate, "Gbit/s"),
            ("bench_min_busbw_gbs", settings.get("bench_min_busbw_gbs"), line_rate / 8, "GB/s"),
        ):
            number = _number(value)
            if number is not None and number > limit:
                problems.append(
                    f"validation_{name} ({number:g} {unit}) is above what the line rate of {line_rate:g} Gbit/s "
                    f"allows ({limit:g} {unit}): no link could pass"
                )
    if isinstance(settings.get("cost"), Mapping) and settings["cost"]:
        problems += cost.problems(settings["cost"])
    problems += baseline.tolerance_problems(settings.get("tolerances", {}), "validation_tolerances")
    if not isinstance(settings.get("baseline", ""), str):
        problems.append(f"validation_baseline must be the path of a report.json, got {settings['baseline']!r}")
    elif settings.get("baseline_accept") and not settings.get("baseline"):
        problems.append("validation_baseline_accept needs validation_baseline: the path to record the run at")
    if settings.get("fail_on") not in FAIL_ON:
        problems.append(f"validation_fail_on must be one of {', '.join(FAIL_ON)}, got {settings.get('fail_on')!r}")
    problems += filter(None, (gpu_count_problem(host, count) for host, count in sorted(gpu_counts.items())))
    return problems


def pcie_width_problems(widths: Mapping[str, Any]) -> list[str]:
    """widths: compute host -> gpulab_gpu_pcie_width (None if unset): the slot width its GPUs are held to."""
    return [
        f"{host}: gpulab_gpu_pcie_width must be a PCIe link width ({', '.join(map(str, PCIE_WIDTHS))}), got {width!r}"
        for host, width in sorted(widths.items())
        if width is not None and (isinstance(width, bool) or _number(width) not in PCIE_WIDTHS)
    ]


def in_node_busbw_problems(expected: Mapping[str, Any]) -> list[str]:
    """expected: compute host -> gpulab_nccl_in_node_busbw_gbs (None if unset), the in-node busbw it is held to."""
    return [
        f"{host}: gpulab_nccl_in_node_busbw_gbs must be a number of GB/s above 0, got {value!r}"
        for host, value in sorted(expected.items())
        if value is not None and (isinstance(value, bool) or (_number(value) or 0) <= 0)
    ]


def validate_settings_problems(
    settings: Mapping[str, Any], hostvars: Mapping[str, Any], groups: Mapping[str, list[str]]
) -> list[str]:
    """The filter: reads each compute node's gpulab_gpu_count, gpulab_gpu_pcie_width and
    gpulab_nccl_in_node_busbw_gbs from hostvars."""
    compute = groups.get("compute", [])
    controller = slurm_controller_host(
        next(
            (hostvars[h]["slurm_controller"] for h in groups.get("all", []) if hostvars[h].get("slurm_controller")),
            None,
        ),
        groups,
    )
    drain = (
        []
        if controller or not settings.get(f"{PREFIX}drain")
        else [
            "validation_drain needs a Slurm controller to drain through: set slurm_controller or put a node in the "
            "management group"
        ]
    )
    counts = {h: hostvars[h].get("gpulab_gpu_count") for h in compute}
    widths = {h: hostvars[h].get("gpulab_gpu_pcie_width") for h in compute}
    in_node = {h: hostvars[h].get("gpulab_nccl_in_node_busbw_gbs") for h in compute}
    return (
        drain
        + validate_problems(settings, groups.get("all", []), counts)
        + pcie_width_problems(widths)
        + in_node_busbw_problems(in_node)
    )


# Registered variable of each node check in the validation role -> report section.
RESULT_VARS = {
    "gpu": "__validation_gpu",
    "slurm": "__validation_slurm_node",
    "rdma": "__validation_rdma",
    "nccl": "__validation_nccl",
    "network": "__validation_net",
    "host": "__validation_host",
}


def validation_results(hostvars: Mapping[str, Any], hosts: Iterable[str]) -> dict[str, dict[str, Any]]:
    """host -> {reached, versions, gpu, slurm, rdma, nccl, network, host: registered result or {}} for the report.

    reached: the node answered the version read every node runs with its versions (false for unreachable
    or failed nodes, and for a read that errored: its registered result has no versions).
    """
    return {
        h: {
            "reached": "versions" in (hostvars[h].get("__validation_versions") or {}),
            "versions": (hostvars[h].get("__validation_versions") or {}).get("versions"),
            **{section: hostvars[h].get(var) or {} for section, var in RESULT_VARS.items()},
        }
        for h in hosts
    }


def gate_problems(hostvars: Mapping[str, Any], host: str) -> list[str]:
    """What fails in one node's checks (tasks_from: node), judged as the report judges: the upgrade's health gate."""
    results = validation_results(hostvars, [host])[host]
    read = hostvars[host].get("__validation_versions") or {}
    problems = [] if results["reached"] else [f"the node's versions could not be read ({read.get('msg', 'no result')})"]
    for name in ("gpu", "rdma", "nccl"):
        problems += [
            f"{name} {check['check']}: {check['message']}"
            for check in report.section(results[name])["checks"]
            if check["status"] == "fail"
        ]
    return problems


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "validate_problems": validate_settings_problems,
            "validation_results": validation_results,
            "gate_problems": gate_problems,
            "blocking_findings": blocking_findings,
        }
