"""Questions about a host, or a group of hosts, that several roles ask of their facts and variables."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

CONTAINER_TYPES = ("docker", "container", "containerd", "podman", "lxc", "systemd-nspawn")


def in_container(facts: Mapping[str, Any]) -> bool:
    """True in a container (it shares the host's kernel and clock): needs the 'virtual' fact subset."""
    return facts.get("virtualization_role") == "guest" and facts.get("virtualization_type") in CONTAINER_TYPES


def gpus_per_node(hostvars: Mapping[str, Mapping[str, Any]], hosts: Iterable[str]) -> int:
    """GPUs a job may ask of each node (--gres=gpu:N) and find on every GPU node among hosts: the smallest
    gpulab_gpu_count of those that declare one; 0 when none does. Slurm places such a job on GPU nodes only,
    so a CPU node among them does not lower it."""
    counts = [int(hostvars[host]["gpulab_gpu_count"]) for host in hosts if "gpulab_gpu_count" in hostvars[host]]
    return min(counts, default=0)


def gpu_count_problem(host: str, count: Any) -> str | None:
    """The rule for a declared gpulab_gpu_count, one home for every check that reads it: a whole number of at
    least 1 (a number given as text on the command line counts); None when it holds or nothing is declared."""
    if count is None:
        return None
    try:
        number = None if isinstance(count, bool) else float(count)
    except (TypeError, ValueError):
        number = None
    if number is not None and number >= 1 and number.is_integer():
        return None
    return (
        f"{host}: gpulab_gpu_count must be a whole number of at least 1, got {count!r}; "
        "leave it unset on a node without GPUs"
    )


def missing(items: Iterable[str], known: Iterable[str]) -> list[str]:
    """The items not among known (hosts not in the inventory, devices not in a list), each once, in order:
    what the roles' settings checks name."""
    known = set(known)
    return list(dict.fromkeys(item for item in items if item not in known))


def monitoring_server_host(hostvars: Mapping[str, Mapping[str, Any]], groups: Mapping[str, list[str]]) -> str:
    """The host that runs Prometheus, as the monitoring role decides it (monitoring_server): the first host
    whose inventory sets it true, else the first management node that does not set it false; '' for none."""
    chosen = [host for host in groups.get("all", []) if boolean(hostvars[host].get("monitoring_server"), strict=False)]
    if chosen:
        return chosen[0]
    managers = groups.get("management", [])
    return next((host for host in managers if boolean(hostvars[host].get("monitoring_server", True), strict=False)), "")


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "in_container": in_container,
            "gpus_per_node": gpus_per_node,
            "monitoring_server_host": monitoring_server_host,
        }
