"""Address planning: node addresses come from the cluster's network plan, not from facts.

Every node carries a stable `gpulab_node_index`; its address on each traffic class is
host number `address_offset + index` of that class's subnet. Deriving addresses from
inventory alone lets one node be added with `--limit` (no facts from the others needed).
"""

from __future__ import annotations

from typing import Any

import netaddr
from ansible.errors import AnsibleFilterError

DEFAULT_OFFSET = 10


def _subnet(plan: dict[str, Any], traffic_class: str) -> netaddr.IPNetwork:
    networks = plan.get("networks") or {}
    if traffic_class not in networks:
        raise AnsibleFilterError(
            f"gpulab_network.networks has no '{traffic_class}' entry; "
            f"defined traffic classes: {', '.join(sorted(networks)) or 'none'}"
        )
    subnet = networks[traffic_class].get("subnet")
    try:
        return netaddr.IPNetwork(subnet)
    except (netaddr.AddrFormatError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(
            f"gpulab_network.networks.{traffic_class}.subnet '{subnet}' is not a CIDR subnet: {exc}"
        ) from exc


def node_address(plan: dict[str, Any], traffic_class: str, index: int) -> str:
    """Address of node number `index` on `traffic_class` ('management', 'compute', ...)."""
    if not isinstance(index, int) or isinstance(index, bool) or index < 1:
        raise AnsibleFilterError(f"gpulab_node_index must be a positive integer, got {index!r}")
    net = _subnet(plan, traffic_class)
    host_number = int(plan.get("address_offset", DEFAULT_OFFSET)) + index
    usable = net.size - 2 if net.version == 4 and net.prefixlen < 31 else net.size
    if host_number >= usable + 1 or host_number < 1:
        raise AnsibleFilterError(
            f"node index {index} (+ address_offset) does not fit in {traffic_class} subnet {net} "
            f"({usable} usable addresses)"
        )
    return str(net.network + host_number)


def node_addresses(
    hostvars: dict[str, Any], hosts: list[str], plan: dict[str, Any], traffic_class: str = "management"
) -> dict[str, str]:
    """Map host -> address on `traffic_class`. A host's own `gpulab_address` wins on management."""
    result = {}
    for host in hosts:
        hv = hostvars[host]
        explicit = hv.get("gpulab_address") if traffic_class == "management" else None
        if explicit:
            result[host] = str(explicit)
        elif "gpulab_node_index" in hv:
            result[host] = node_address(plan, traffic_class, hv["gpulab_node_index"])
        else:
            raise AnsibleFilterError(
                f"host {host} has neither gpulab_node_index nor gpulab_address; set one in the inventory"
            )
    return result


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"node_address": node_address, "node_addresses": node_addresses}
