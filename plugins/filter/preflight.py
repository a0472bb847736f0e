"""Preflight rules for the whole cluster, as pure functions over inventory data and facts.

`preflight_problems` returns one line per problem, each naming the hosts and what to fix,
so an operator sees every problem of the cluster in one run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.filter.host_facts import gpu_count_problem
from ansible_collections.gpulab.cluster.plugins.filter.network_plan import (
    node_addresses,
    plan_problems,
    require_netaddr,
)
from ansible_collections.gpulab.cluster.plugins.module_utils import sizing
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import as_number
from ansible_collections.gpulab.cluster.plugins.module_utils.versions import odd_ones_out

NODE_GROUPS = ("management", "compute", "storage")
SUPPORTED_OS = ("Ubuntu 22.04", "Ubuntu 24.04", "Debian 12")


def os_label(facts: Mapping[str, Any]) -> str:
    """'Debian 12' (point releases are one release), 'Ubuntu 22.04'."""
    distribution = facts.get("distribution", "unknown")
    if distribution == "Debian":
        version = facts.get("distribution_major_version", "?")
    else:
        version = facts.get("distribution_version", "?")
    return f"{distribution} {version}"


def _shared(values: Mapping[str, str]) -> dict[str, list[str]]:
    by_value: dict[str, list[str]] = defaultdict(list)
    for host, value in values.items():
        by_value[value].append(host)
    return {value: sorted(hosts) for value, hosts in sorted(by_value.items()) if len(hosts) > 1}


def check_hosts(hosts: Mapping[str, Mapping[str, Any]], supported: Iterable[str] = SUPPORTED_OS) -> list[str]:
    """Problems of a cluster described per host by: groups, python (bool), facts, address,
    nvidia_gpus (PCI addresses; absent where not looked for) and require_gpu (bool)."""
    supported = list(supported)
    problems: list[str] = []
    with_facts = {h: d["facts"] for h, d in hosts.items() if d.get("python") and d.get("facts")}

    for host, data in sorted(hosts.items()):
        if not set(data.get("groups", ())) & set(NODE_GROUPS):
            problems.append(f"{host}: in none of the node groups ({', '.join(NODE_GROUPS)}); add it to at least one")
        if not data.get("python"):
            problems.append(f"{host}: no python3 on the host; install it (apt-get install python3) and rerun")
        if "compute" in data.get("groups", ()) and data.get("nvidia_gpus") == [] and data.get("require_gpu", True):
            problems.append(
                f"{host}: in the compute group but no NVIDIA GPU is on its PCI bus; seat the GPU, move the "
                "host out of compute, or set nvidia_driver_require_gpu: false"
            )

    os_by_host = {h: os_label(f) for h, f in with_facts.items()}
    for host, label in sorted(os_by_host.items()):
        if label not in supported:
            problems.append(f"{host}: {label} is not supported; install one of: {', '.join(supported)}")

    if len(set(os_by_host.values())) > 1:
        top, odd = odd_ones_out(os_by_host)
        for host in odd:
            problems.append(
                f"{host}: runs {os_by_host[host]} while the other nodes run {top}; "
                "install the same OS release on every node"
            )

    kernels = {h: str(f.get("kernel", "unknown")) for h, f in with_facts.items()}
    if len(set(kernels.values())) > 1:
        top, odd = odd_ones_out(kernels)
        for host in odd:
            problems.append(
                f"{host}: runs kernel {kernels[host]} while the other nodes run {top}; "
                "install the same kernel everywhere and reboot"
            )

    addresses = {h: d["address"] for h, d in hosts.items() if d.get("address")}
    for address, owners in _shared(addresses).items():
        problems.append(
            f"{', '.join(owners)}: share the address {address}; "
            "give each host its own gpulab_node_index (or gpulab_address)"
        )

    names = {h: str(f.get("hostname")) for h, f in with_facts.items() if f.get("hostname")}
    for name, owners in _shared(names).items():
        problems.append(f"{', '.join(owners)}: share the hostname '{name}'; give every node its own hostname")
    return problems


def preflight_problems(
    hostvars: Mapping[str, Any],
    hosts: list[str],
    plan: Mapping[str, Any],
    supported: Iterable[str] | None = None,
) -> list[str]:
    """Ansible filter: collect per-host data from hostvars, then run check_hosts."""
    require_netaddr()
    problems: list[str] = plan_problems(dict(plan) if isinstance(plan, Mapping) else plan)
    addresses = {}
    if not problems:  # addresses come from the plan: only a sound plan gives them
        try:
            addresses = node_addresses(hostvars, hosts, dict(plan))
        except AnsibleFilterError as exc:
            problems.append(str(exc))
    first = hostvars[hosts[0]] if hosts else {}
    no_manager = not first.get("rdma_subnet_manager_hosts") and not first.get("rdma_subnet_manager_external")
    if isinstance(plan, Mapping) and plan.get("fabric") == "infiniband" and hosts and no_manager:
        problems.append(
            "gpulab_network.fabric is infiniband but rdma_subnet_manager_hosts is empty: an InfiniBand fabric "
            "never comes up without a subnet manager; name the hosts that run opensm, or set "
            "rdma_subnet_manager_external: true when one runs elsewhere (on a managed switch)"
        )
    if "slurm" in (first.get("gpulab_versions") or {}):
        problems.append(
            "gpulab_versions.slurm is not read by any role: Slurm is the distribution's own (22.05 on Debian 12, "
            "21.08 on Ubuntu 22.04, 23.11 on Ubuntu 24.04); remove the entry"
        )
    described = {}
    for host in hosts:
        hv = hostvars[host]
        problems += filter(None, [gpu_count_problem(host, hv.get("gpulab_gpu_count"))])
        probe = hv.get("__gpulab_python_probe") or {}
        described[host] = {
            "groups": list(hv.get("group_names", [])),
            "python": probe.get("rc", 1) == 0,
            "facts": dict(hv.get("ansible_facts") or {}),
            "address": addresses.get(host),
            "require_gpu": bool(hv.get("nvidia_driver_require_gpu", True)),
        }
        gpus = hv.get("__nvidia_driver_gpus") or {}
        if "stdout_lines" in gpus:
            described[host]["nvidia_gpus"] = [line.split()[0] for line in gpus["stdout_lines"] if line.strip()]
    return problems + check_hosts(described, supported or SUPPORTED_OS)


def gpu_links(lines: Iterable[str]) -> list[dict[str, Any]]:
    """find_gpus' lines ("<address> <width> <max width> <NUMA node>", "?" where unreadable) as
    {address, width, max_width, numa}, numbers or None."""
    links = []
    for line in lines:
        fields = line.split()
        if len(fields) == 4:
            width, widest, numa = (as_number(f) for f in fields[1:])
            links.append({"address": fields[0], "width": width, "max_width": widest, "numa": numa})
    return links


def link_warnings(
    host: str,
    gpus: list[dict[str, Any]],
    nic: str | None,
    speed_gbps: float | None,
    declared_width: int | None,
) -> list[str]:
    """The planner's link rules on what the node's sysfs says: a GPU at fewer lanes than its slot gives
    (declared_width, else the card's widest), the fabric NIC's link short of its port (`nic`:
    "<width> <GT/s> <NUMA node>", as preflight reads it), and GPUs on another NUMA node than the NIC."""
    warnings = []
    for gpu in gpus:
        wanted = declared_width or gpu["max_width"]
        if gpu["width"] and wanted and gpu["width"] < wanted:
            warnings.append(
                f"{host}: the GPU at {gpu['address']} runs at x{gpu['width']:g} of x{wanted:g}: a slot narrower than "
                "planned, a riser, or a card not seated (gpulab_gpu_pcie_width declares the slot's width)"
            )
    fields = [as_number(f) for f in (nic or "").split()]
    if len(fields) != 3 or None in fields:
        return warnings
    width, rate, nic_numa = fields
    gen = sizing.PCIE_GEN_BY_GTS.get(rate)
    short = sizing.slot_shortfall(speed_gbps, int(width), gen) if gen and speed_gbps else None
    if short:
        warnings.append(f"{host}: the fabric NIC's link: {short}")
    gpu_numa = [int(g["numa"]) for g in gpus if g["numa"] is not None and g["numa"] >= 0]
    apart = sizing.numa_apart(gpu_numa, int(nic_numa)) if gpu_numa and nic_numa >= 0 else None
    if apart:
        warnings.append(f"{host}: {apart}")
    return warnings


def preflight_link_warnings(hostvars: Mapping[str, Any], hosts: list[str], plan: Any) -> list[str]:
    """link_warnings for every host that read its GPUs' or fabric NIC's links (compute nodes)."""
    speed = (plan or {}).get("link_speed_gbps") if isinstance(plan, Mapping) else None
    warnings = []
    for host in hosts:
        hv = hostvars[host]
        gpus = gpu_links((hv.get("__nvidia_driver_gpus") or {}).get("stdout_lines") or [])
        nic = (hv.get("__gpulab_fabric_link") or {}).get("stdout")
        declared = hv.get("gpulab_gpu_pcie_width")
        warnings += link_warnings(host, gpus, nic, as_number(speed), declared and int(declared))
    return warnings


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"preflight_problems": preflight_problems, "preflight_link_warnings": preflight_link_warnings}
