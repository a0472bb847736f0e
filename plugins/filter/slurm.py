"""Slurm settings checked against the inventory before anything is installed: one line per problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.filter.host_facts import gpu_count_problem
from ansible_collections.gpulab.cluster.plugins.module_utils.slurm import DRAIN_PREFIXES, slurm_seconds

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
    qos: Mapping[str, list[dict[str, Any]]] | None = None,
    accounts: list[dict[str, Any]] | None = None,
    accounting: str = "accounting_storage/slurmdbd",
) -> list[str]:
    """Problems of the slurm role's inventory: controller, node resources, GPU counts, partitions, munge key,
    QOS. qos: {variable: its QOS entries} (slurm_qos, and slurm_preemption_tiers only when preemption is on);
    accounting: AccountingStorageType as slurm.conf will have it."""
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
    return problems + qos_problems(qos or {}, partitions, accounts or [], accounting)


PREEMPT_MODES = ("requeue", "cancel", "off", "cluster")
PARTITION_QOS_OPTIONS = ("QOS", "AllowQos", "DenyQos")


def _qos_names(value: Any) -> list[str]:
    return [n.strip() for n in (value.split(",") if isinstance(value, str) else value or []) if str(n).strip()]


def qos_problems(
    qos: Mapping[str, list[dict[str, Any]]],
    partitions: list[dict[str, Any]],
    accounts: list[dict[str, Any]],
    accounting: str,
) -> list[str]:
    """QOS entries, and the partitions and accounts that name QOS, against each other."""
    problems = []
    known = {"normal"}  # Slurm's own, always there
    for entries in qos.values():
        known.update(str(q.get("name")) for q in entries if q.get("name"))
    for variable, entries in qos.items():
        for index, entry in enumerate(entries):
            name = entry.get("name")
            where = f"{variable}[{index}]" + (f" '{name}'" if name else "")
            if not name:
                problems.append(f"{where} has no name")
            grace = entry.get("grace_time", 0)
            if isinstance(grace, bool) or not (isinstance(grace, int) or str(grace).isdigit()):
                problems.append(f"{where}: grace_time must be a whole number of seconds, got {grace!r}")
            try:
                slurm_seconds(entry.get("max_wall", ""))
            except ValueError:
                problems.append(
                    f"{where}: max_wall must be a Slurm time like 04:00:00 or 1-00:00:00, got {entry['max_wall']!r}"
                )
            mode = str(entry.get("preempt_mode", "cluster")).lower()
            if mode not in PREEMPT_MODES:
                problems.append(f"{where}: preempt_mode must be one of {', '.join(PREEMPT_MODES)}, got {mode!r}")
            unknown = sorted(set(_qos_names(entry.get("preempt"))) - known)
            if unknown:
                problems.append(f"{where}: preempt names QOS that are not defined: {', '.join(unknown)}")
    names = [str(q.get("name")) for entries in qos.values() for q in entries if q.get("name")]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        problems.append(f"QOS defined twice (in {' and '.join(qos)}): {', '.join(twice)}")
    defined = f"not defined in {', '.join(qos) or 'slurm_qos'} (or Slurm's normal)"
    for partition in partitions:
        for option in PARTITION_QOS_OPTIONS:
            unknown = sorted(set(_qos_names((partition.get("options") or {}).get(option))) - known)
            if unknown:
                problems.append(
                    f"slurm_partitions '{partition.get('name')}' {option} names QOS {defined}: {', '.join(unknown)}"
                )
    for account in accounts:
        unknown = sorted(set(_qos_names(account.get("qos"))) - known)
        if unknown:
            problems.append(f"slurm_accounts '{account.get('name')}' names QOS {defined}: {', '.join(unknown)}")
    if "slurm_preemption_tiers" in qos and accounting != "accounting_storage/slurmdbd":
        problems.append(
            "slurm_preemption needs Slurm accounting (its QOS live in slurmdbd), but slurm_config sets "
            f"AccountingStorageType={accounting}"
        )
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
