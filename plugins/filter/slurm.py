"""Slurm settings checked against the inventory before anything is installed: one line per problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.filter.host_facts import gpu_count_problem
from ansible_collections.gpulab.cluster.plugins.module_utils.slurm import DRAIN_PREFIXES

MIN_MUNGE_KEY = 32  # bytes; munged refuses shorter keys


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def slurm_problems(
    hostvars: Mapping[str, Mapping[str, Any]],
    groups: Mapping[str, list[str]],
    controller: str,
    partitions: list[dict[str, Any]],
    munge_key_source: str,
    munge_key: str,
) -> list[str]:
    """Problems of the slurm role's inventory: controller, node resources, GPU counts, partitions, munge key."""
    problems = []
    compute = list(groups.get("compute", []))
    if not controller or controller not in groups.get("all", []):
        problems.append(
            f"slurm_controller '{controller}' is not an inventory host (default: the first management node)"
        )
    if not compute:
        problems.append("the compute group is empty: Slurm needs at least one compute node")
    for host in compute:
        hv = hostvars[host]
        for name in ("gpulab_cpus", "gpulab_memory_mb"):
            if not _positive_int(hv.get(name)):
                problems.append(
                    f"{host}: {name} must be a whole number of at least 1, got {hv.get(name)!r}; Slurm's node "
                    "line comes from the inventory so that one node can be added with --limit"
                )
        problems += filter(None, [gpu_count_problem(host, hv.get("gpulab_gpu_count"))])
    names = [p.get("name") for p in partitions]
    if not partitions:
        problems.append("slurm_partitions is empty: define at least one partition")
    for partition in partitions:
        name = partition.get("name")
        if not name:
            problems.append(f"a slurm_partitions entry has no name: {partition!r}")
            continue
        unknown = sorted(set(partition.get("nodes") or []) - set(compute))
        if unknown:
            problems.append(f"slurm_partitions '{name}' names node(s) not in the compute group: {', '.join(unknown)}")
    if len(set(names)) != len(names):
        problems.append(
            f"slurm_partitions has duplicate names: {', '.join(sorted(n for n in set(names) if names.count(n) > 1))}"
        )
    if sum(1 for p in partitions if p.get("default")) > 1:
        problems.append("more than one slurm_partitions entry has default: true")
    if munge_key_source == "vault" and not munge_key:
        problems.append(
            "slurm_munge_key is empty while slurm_munge_key_source is 'vault': put the key in an Ansible Vault "
            "file (e.g. dd if=/dev/urandom bs=48 count=1 | base64 -w0) or use slurm_munge_key_source: generate"
        )
    elif munge_key_source == "vault" and len(str(munge_key)) < MIN_MUNGE_KEY:
        problems.append(f"slurm_munge_key is shorter than {MIN_MUNGE_KEY} characters; munged refuses it")
    return problems


def slurm_controller_host(slurm_controller: str | None, groups: Mapping[str, list[str]]) -> str:
    """The host slurmctld runs on: slurm_controller when set, else the first management node ('' with neither).
    The slurm role installs it there; the upgrade and validation roles drain and resume through it."""
    return slurm_controller or (list(groups.get("management") or []) + [""])[0]


def drain_prefix(owner: str) -> str:
    """The reason prefix `owner` (validate, upgrade, upgrade_ceph, ups, node_check) drains Slurm nodes with."""
    try:
        return DRAIN_PREFIXES[owner]
    except KeyError:
        raise AnsibleFilterError(f"drain_prefix: unknown owner {owner!r}, known: {', '.join(DRAIN_PREFIXES)}") from None


def other_drain_prefixes(owner: str) -> list[str]:
    """The prefixes of every owner but `owner`: the drains it must leave alone."""
    mine = drain_prefix(owner)
    return [prefix for prefix in DRAIN_PREFIXES.values() if prefix != mine]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "slurm_problems": slurm_problems,
            "slurm_controller_host": slurm_controller_host,
            "drain_prefix": drain_prefix,
            "other_drain_prefixes": other_drain_prefixes,
        }
