"""Address planning: node addresses come from the cluster's network plan, not from facts.

Every node carries a stable `gpulab_node_index`; its address on each traffic class is
host number `address_offset + index` of that class's subnet. Deriving addresses from
inventory alone lets one node be added with `--limit` (no facts from the others needed).
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError

try:
    import netaddr
except ImportError:  # importing must work without it (ansible-test does); using a filter says what is missing
    netaddr = None

from ansible_collections.gpulab.cluster.plugins.module_utils import plan as plan_defaults

DEFAULT_OFFSET = 10
FABRICS = ("roce", "infiniband", "ethernet")
# Largest MTU per fabric: jumbo Ethernet frames; IPoIB in connected mode.
MAX_MTU = {"roce": 9216, "ethernet": 9216, "infiniband": 65520}
MIN_MTU = 1280  # what IPv6 needs; nothing smaller is a sensible cluster link
# Bond modes gpulab renders; 802.3ad (LACP) needs the switch ports in a LAG, active-backup does not.
BOND_MODES = ("802.3ad", "active-backup", "balance-xor")


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
    """Address of node number `index` on `traffic_class` ('management', 'compute', ...). A string of
    digits counts as its number: `-e gpulab_node_index=3` gives the string '3'."""
    if isinstance(index, str) and index.strip().isdigit():
        index = int(index)
    if not isinstance(index, int) or isinstance(index, bool) or index < 1:
        raise AnsibleFilterError(f"gpulab_node_index must be a whole number of at least 1, got {index!r}")
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


def planned_mtus(hostvars: dict[str, Any], host: str, plan: dict[str, Any], classes: list[str]) -> list[dict[str, Any]]:
    """The links validation holds `host` to: management and `classes`, each {traffic_class, address, mtu}
    (the plan's MTU, 1500 where it gives none). A host the plan cannot place (no index, no
    address) has none."""
    if not {"gpulab_node_index", "gpulab_address"} & set(hostvars[host]):
        return []
    return [
        {
            "traffic_class": name,
            "address": node_addresses(hostvars, [host], plan, name)[host],
            "mtu": int(plan["networks"][name].get("mtu", 1500)),
        }
        for name in dict.fromkeys(["management", *classes])
        if name in plan.get("networks", {})
    ]


def host_links(
    plan: dict[str, Any],
    index: int,
    interfaces: dict[str, str] | None = None,
    classes: list[str] | None = None,
    bonds: dict[str, Any] | None = None,
    management_address: str | None = None,
) -> list[dict[str, Any]]:
    """The links node `index` needs for `classes` (default: every traffic class but management).

    One entry per NIC or bond first (its MTU the largest of what rides on it, since a VLAN
    cannot exceed its parent), then each bond's members, then one per VLAN:
    {name, kind: nic|bond|member|vlan, parent, vlan, address, mtu} (bonds add members and mode).
    A class with a `vlan` gets a VLAN interface `<nic>.<vlan>`; one without puts its address on
    the NIC itself (IPoIB, an untagged port). `interfaces` (per host) overrides each class's
    `interface`; an interface named in `bonds` (default: the plan's) is a bond of its members.
    A class's `gateway` and `dns` go with its address. The NICs the management class rides on
    are marked `management: True`; its address is `management_address` (the host's
    gpulab_address) when given.
    """
    if bonds is None:
        bonds = plan.get("bonds") or {}
    networks = plan.get("networks") or {}
    wanted = classes if classes is not None else [c for c in sorted(networks) if c != "management"]
    nics: dict[str, dict[str, Any]] = {}
    vlans: list[dict[str, Any]] = []
    for name in wanted:
        network = networks[name]
        nic = (interfaces or {}).get(name) or network.get("interface")
        if not nic:
            raise AnsibleFilterError(
                f"gpulab_network.networks.{name} has no interface; set it there or in the host's network_interfaces"
            )
        mtu = int(network.get("mtu", 1500))
        host = management_address if name == "management" and management_address else node_address(plan, name, index)
        address = f"{host}/{_subnet(plan, name).prefixlen}"
        routing = {key: network[key] for key in ("gateway", "dns") if network.get(key)}
        mark = {"management": True} if name == "management" else {}
        entry = nics.setdefault(
            nic, {"name": nic, "kind": "nic", "parent": None, "vlan": None, "address": None, "mtu": mtu}
        )
        entry.update(mtu=max(entry["mtu"], mtu), **mark)
        if network.get("vlan") is None:
            if entry["address"]:
                raise AnsibleFilterError(f"{nic} would carry two untagged networks; give {name} a vlan")
            entry.update(address=address, **routing)
        else:
            vlan = int(network["vlan"])
            vlans.append(
                {"name": f"{nic}.{vlan}", "kind": "vlan", "parent": nic, "vlan": vlan, "address": address, "mtu": mtu}
                | routing
                | mark
            )
    members = []
    for entry in nics.values():
        if entry["name"] in bonds:
            bond = bonds[entry["name"]]
            entry.update(kind="bond", members=list(bond["interfaces"]), mode=bond.get("mode", BOND_MODES[0]))
            member = {"kind": "member", "parent": entry["name"], "vlan": None, "address": None, "mtu": entry["mtu"]}
            if entry.get("management"):
                member["management"] = True
            members += [{"name": nic, **member} for nic in bond["interfaces"]]
    return list(nics.values()) + members + sorted(vlans, key=lambda link: link["name"])


def fabric_nic(plan: Any, interfaces: dict[str, str] | None = None) -> str:
    """The NIC this node's compute traffic (NCCL, RDMA) rides on: the host's `network_interfaces.compute`, else
    the plan's compute interface; "" when the plan has no compute network."""
    compute = ((plan or {}).get("networks") or {}).get("compute") or {}
    return (interfaces or {}).get("compute") or compute.get("interface") or ""


def interface_problems(ip_links: list[dict[str, Any]], links: list[dict[str, Any]], protected: list[str]) -> list[str]:
    """What stops `links` (host_links) from being applied, read from `ip -j -d addr show`.

    A NIC that does not exist, an MTU above what the NIC's driver allows (max_mtu), and a NIC
    that carries one of the `protected` addresses (the one Ansible connects to) unless the
    management class is configured on it (the role then applies the change with a rollback):
    a file for that NIC without the management address would cut the connection.
    """
    present = {link["ifname"]: link for link in ip_links}
    problems = []
    for link in (entry for entry in links if entry["kind"] in ("nic", "member")):
        found = present.get(link["name"])
        if found is None:
            problems.append(f"{link['name']} does not exist here (interfaces: {', '.join(sorted(present))})")
            continue
        if found.get("max_mtu") and link["mtu"] > found["max_mtu"]:
            problems.append(
                f"MTU {link['mtu']} on {link['name']} is above what its driver allows ({found['max_mtu']}); "
                "lower the plan's mtu or use a NIC that supports jumbo frames"
            )
        held = [a["local"] for a in found.get("addr_info", []) if a.get("local") in protected]
        if held and not link.get("management"):
            problems.append(
                f"{link['name']} carries {', '.join(held)}, the address Ansible uses: gpulab reconfigures it only "
                "with the management class on it (network_classes); or put the traffic classes on another NIC"
            )
    return problems


def address_moves(links: list[dict[str, Any]], connect_to: str) -> list[str]:
    """A management address other than the one Ansible connects to (`connect_to`), in its subnet.

    Ansible reconnects at `connect_to` after the change, so a move would always be rolled back:
    refused, naming gpulab_address, which pins the address the node has.
    """
    try:
        current = netaddr.IPAddress(connect_to)
    except (netaddr.AddrFormatError, TypeError, ValueError):
        return []  # a name, not an address: nothing to compare
    problems = []
    for link in links:
        if link.get("management") and link["address"]:
            planned = netaddr.IPNetwork(link["address"])
            if current in planned.cidr and current != planned.ip:
                problems.append(
                    f"the plan gives {link['name']} the management address {planned.ip}, but Ansible connects to "
                    f"{current}: set gpulab_address: {current} to keep it (moving the address Ansible uses "
                    "would cut the run off and be rolled back)"
                )
    return problems


def link_mismatches(ip_links: list[dict[str, Any]], links: list[dict[str, Any]]) -> list[str]:
    """Where the node's links (`ip -j -d addr show`) differ from `links` (host_links): missing, MTU, address."""
    present = {link["ifname"]: link for link in ip_links}
    problems = []
    for link in links:
        found = present.get(link["name"])
        if found is None:
            problems.append(f"{link['name']} is missing")
            continue
        if found.get("mtu") != link["mtu"]:
            problems.append(f"{link['name']} has MTU {found.get('mtu')}, not {link['mtu']}")
        addresses = [f"{a['local']}/{a['prefixlen']}" for a in found.get("addr_info", []) if a.get("family") == "inet"]
        if link["address"] and link["address"] not in addresses:
            problems.append(f"{link['name']} lacks {link['address']} (has {', '.join(addresses) or 'none'})")
        if link["kind"] == "member" and found.get("master") != link["parent"]:
            problems.append(f"{link['name']} is not in {link['parent']} (master: {found.get('master') or 'none'})")
    return problems


def networkd_files(links: list[dict[str, Any]], directory: str) -> list[dict[str, Any]]:
    """The systemd-networkd files of a node's links, as gpulab.cluster.files entries: a .network file per
    link, a .netdev file per VLAN and bond (networkd creates those), each template seeing its link."""
    files = [("network", "link.network.j2", link) for link in links]
    files += [("netdev", "link.netdev.j2", link) for link in links if link["kind"] in ("vlan", "bond")]
    return [
        {
            "path": f"{directory}/05-gpulab-{link['name']}.{suffix}",
            "template": template,
            "vars": {"__network_link": link},
            "owner": "root",
            "group": "root",
            "mode": "0644",
        }
        for suffix, template, link in files
    ]


MIN_ROLLBACK_SECONDS = 30


def _int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def bond_problems(bonds: Any, networks: dict[str, Any], variable: str = "gpulab_network.bonds") -> list[str]:
    """What is wrong with `bonds` ({name: {interfaces, mode}}), each line naming `variable`."""
    if bonds is None:
        return []
    if not isinstance(bonds, dict):
        return [f"{variable} must map a bond name to {{interfaces, mode}}"]
    problems, owner = [], {}
    direct = {n.get("interface") for n in networks.values() if isinstance(n, dict)}
    for name, bond in sorted(bonds.items()):
        where = f"{variable}.{name}"
        members = bond.get("interfaces") if isinstance(bond, dict) else None
        if not isinstance(members, list) or not members or not all(isinstance(m, str) and m for m in members):
            problems.append(f"{where}.interfaces must be a non-empty list of NIC names")
            continue
        if bond.get("mode", BOND_MODES[0]) not in BOND_MODES:
            problems.append(f"{where}.mode must be one of {', '.join(BOND_MODES)}; got {bond.get('mode')!r}")
        for member in members:
            if member in owner:
                problems.append(f"{member} is in both {owner[member]} and {name}; a NIC joins one bond")
            elif member in direct:
                problems.append(f"{member} is in {name} and also a network's interface; use {name} there")
            owner[member] = name
    return problems


def network_problems(bonds: Any, networks: dict[str, Any], rollback_seconds: int) -> list[str]:
    """The network role's settings its argument spec cannot check: network_bonds, network_rollback_seconds."""
    problems = bond_problems(bonds, networks, "network_bonds")
    if rollback_seconds < MIN_ROLLBACK_SECONDS:
        problems.append(
            f"network_rollback_seconds must be at least {MIN_ROLLBACK_SECONDS} (reconnecting takes time); "
            f"got {rollback_seconds}"
        )
    return problems


def _routing_problems(where: str, network: dict[str, Any], subnet: netaddr.IPNetwork | None) -> list[str]:
    problems = []
    gateway = network.get("gateway")
    if gateway is not None:
        try:
            if subnet is not None and netaddr.IPAddress(gateway) not in subnet:
                problems.append(f"{where}.gateway {gateway} is outside the subnet {subnet}")
        except (netaddr.AddrFormatError, TypeError, ValueError):
            problems.append(f"{where}.gateway must be an IP address; got {gateway!r}")
    dns = network.get("dns")
    if dns is not None:
        try:
            if not isinstance(dns, list) or not dns:
                raise ValueError
            for server in dns:
                netaddr.IPAddress(server)
        except (netaddr.AddrFormatError, TypeError, ValueError):
            problems.append(f"{where}.dns must be a list of IP addresses; got {dns!r}")
    return problems


# The keys a plan may hold, at each level; anything else is a typo or a setting gpulab does not read.
PLAN_KEYS = ("fabric", "link_speed_gbps", "address_offset", "networks", "bonds", "roce", "infiniband")
NETWORK_KEYS = ("subnet", "vlan", "mtu", "interface", "gateway", "dns")
SECTION_KEYS = {"roce": ("pfc_priority", "dscp", "gid_index", "ecn"), "infiniband": ("service_level",)}


def _unknown_keys(where: str, given: Any, known: tuple[str, ...]) -> list[str]:
    if not isinstance(given, dict):
        return []
    problems = []
    for key in sorted(str(k) for k in given if k not in known):
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"it takes {', '.join(known)}"
        problems.append(f"{where} has an unknown key '{key}': {hint}")
    return problems


def plan_problems(plan: Any) -> list[str]:
    """Everything wrong with a network plan, one line each, before any node is touched."""
    if not isinstance(plan, dict):
        return [f"gpulab_network must be a mapping with a non-empty 'networks' mapping; got {type(plan).__name__}"]
    problems = _unknown_keys("gpulab_network", plan, PLAN_KEYS)
    if not isinstance(plan.get("networks"), dict) or not plan["networks"]:
        return [*problems, "gpulab_network must be a mapping with a non-empty 'networks' mapping"]
    for section, keys in SECTION_KEYS.items():
        problems += _unknown_keys(f"gpulab_network.{section}", plan.get(section), keys)
    fabric = plan.get("fabric", "ethernet")
    if fabric not in FABRICS:
        problems.append(f"gpulab_network.fabric must be one of {', '.join(FABRICS)}; got '{fabric}'")
    subnets = {}
    vlans: dict[tuple[Any, Any], str] = {}
    for name, network in sorted(plan["networks"].items()):
        where = f"gpulab_network.networks.{name}"
        if not isinstance(network, dict):
            problems.append(f"{where} must be a mapping (subnet, vlan, mtu, interface)")
            continue
        problems += _unknown_keys(where, network, NETWORK_KEYS)
        try:
            subnets[name] = _subnet(plan, name)
        except AnsibleFilterError as exc:
            problems.append(str(exc))
        vlan = network.get("vlan")
        if vlan is not None:
            if not _int_in(vlan, 1, 4094):
                problems.append(f"{where}.vlan must be a VLAN id from 1 to 4094; got {vlan!r}")
            key = (network.get("interface"), vlan)
            if key in vlans:
                problems.append(f"{where}.vlan {vlan} is also {vlans[key]}'s on the same interface; give each its own")
            vlans[key] = name
        problems += _routing_problems(where, network, subnets.get(name))
        mtu = network.get("mtu")
        high = MAX_MTU.get(fabric, 9216)
        if mtu is not None and not _int_in(mtu, MIN_MTU, high):
            problems.append(f"{where}.mtu must be from {MIN_MTU} to {high} on a {fabric} fabric; got {mtu!r}")
    names = sorted(subnets)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            if subnets[first] in subnets[second] or subnets[second] in subnets[first]:
                problems.append(
                    f"gpulab_network.networks: {first} ({subnets[first]}) and {second} ({subnets[second]}) overlap; "
                    "give each traffic class its own subnet"
                )
    problems += bond_problems(plan.get("bonds"), plan["networks"])
    if fabric == "roce":
        roce = plan_defaults.roce(plan)
        if not _int_in(roce["pfc_priority"], 0, 7):
            problems.append(f"gpulab_network.roce.pfc_priority must be from 0 to 7; got {roce['pfc_priority']!r}")
        if not _int_in(roce["dscp"], 0, 63):
            problems.append(f"gpulab_network.roce.dscp must be from 0 to 63; got {roce['dscp']!r}")
        if not isinstance(roce["ecn"], bool):
            problems.append(f"gpulab_network.roce.ecn must be true or false; got {roce['ecn']!r}")
    return problems


def require_netaddr() -> None:
    if netaddr is None:
        raise AnsibleFilterError(
            "gpulab.cluster's network filters need the Python package netaddr where Ansible runs: pip install netaddr"
        )


def _with_netaddr(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        require_netaddr()
        return func(*args, **kwargs)

    return wrapper


class FilterModule:
    def filters(self) -> dict[str, Any]:
        plain = {
            "address_moves": address_moves,
            "bond_problems": bond_problems,
            "fabric_nic": fabric_nic,
            "host_links": host_links,
            "interface_problems": interface_problems,
            "link_mismatches": link_mismatches,
            "network_problems": network_problems,
            "node_address": node_address,
            "node_addresses": node_addresses,
            "networkd_files": networkd_files,
            "plan_problems": plan_problems,
            "planned_mtus": planned_mtus,
        }
        return {name: _with_netaddr(func) for name, func in plain.items()}
