"""The host firewall (nftables), derived from the network plan: each opening names a traffic class, the
hosts that open it (`to`) and who may connect (`from`); a node accepts on a class's address only what its
openings allow, and drops the rest there.

An opening: {name, traffic_class, protocol: tcp|udp|all (tcp), ports: [22, "6800-7568"] (none with all),
to: [groups or hosts], from: [groups, hosts, subnets, or "any"], enabled: true}. Groups and hosts
become their addresses on that class, from the plan (node_addresses), never from facts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.filter.network_plan import _with_netaddr, netaddr, node_addresses

PROTOCOLS = ("tcp", "udp", "all")
ANY = "any"
# Answered on every class: ping (validation's do-not-fragment pings) and IPv6 neighbour discovery.
ICMP = (
    "icmp type echo-request accept",
    "icmpv6 type { echo-request, nd-neighbor-solicit, nd-neighbor-advert, nd-router-advert } accept",
)


def _port_problem(port: Any) -> str | None:
    """Why `port` is not a port (1-65535) or a range "LOW-HIGH"; None when it is one."""
    if isinstance(port, bool):
        return f"{port!r} is not a port"
    text = str(port).strip()
    parts = text.split("-")
    if len(parts) > 2 or not all(part.isdigit() for part in parts):
        return f"{port!r} is not a port or a range LOW-HIGH"
    numbers = [int(part) for part in parts]
    if not all(1 <= number <= 65535 for number in numbers):
        return f"{port!r} is outside 1-65535"
    if numbers != sorted(numbers):
        return f"{port!r} runs backwards"
    return None


def _is_subnet(text: str) -> bool:
    if "/" not in text:
        return False
    try:
        netaddr.IPNetwork(text)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return False
    return True


def _hosts(names: list[str], groups: Mapping[str, list[str]]) -> list[str]:
    """Groups and hosts as hosts, each once, in inventory order; subnets and "any" left out."""
    inventory = groups.get("all", [])
    wanted: set[str] = set()
    for name in names:
        wanted.update(groups.get(name, [name] if name in inventory else []))
    return [host for host in inventory if host in wanted]


@_with_netaddr
def firewall_problems(
    openings: list[Mapping[str, Any]], plan: Mapping[str, Any], groups: Mapping[str, list[str]], variable: str
) -> list[str]:
    """What is wrong with `openings` (the list `variable` names), each naming its entry and key."""
    if not isinstance(openings, list):
        return [f"{variable} must be a list of openings, got {type(openings).__name__}"]
    classes = sorted((plan or {}).get("networks") or {})
    inventory = set(groups.get("all", []))
    problems = []
    for index, opening in enumerate(openings):
        if not isinstance(opening, Mapping):
            problems.append(f"{variable}[{index}] must be a mapping, got {type(opening).__name__}")
            continue
        where = f"{variable}[{index}] ({opening.get('name') or 'no name'})"
        unknown = sorted(set(opening) - {"name", "traffic_class", "protocol", "ports", "to", "from", "enabled"})
        if unknown:
            problems.append(f"{where} has unknown keys: {', '.join(unknown)}")
        if not opening.get("name"):
            problems.append(f"{where} needs a name")
        if opening.get("traffic_class") not in classes:
            problems.append(
                f"{where}.traffic_class {opening.get('traffic_class')!r} is not a traffic class of "
                f"gpulab_network.networks ({', '.join(classes) or 'none'})"
            )
        protocol = opening.get("protocol", "tcp")
        ports = opening.get("ports") or []
        if protocol not in PROTOCOLS:
            problems.append(f"{where}.protocol {protocol!r} is not one of {', '.join(PROTOCOLS)}")
        elif protocol == "all" and ports:
            problems.append(f"{where}: protocol all opens every port; give no ports")
        elif protocol != "all" and not ports:
            problems.append(f"{where}.ports: give at least one port (or protocol all)")
        if not isinstance(ports, list):
            problems.append(f"{where}.ports must be a list, got {ports!r}")
        else:
            problems += [f"{where}.ports: {why}" for why in map(_port_problem, ports) if why]
        for key in ("to", "from"):
            names = opening.get(key)
            if not isinstance(names, list) or not names:
                problems.append(f"{where}.{key} must be a non-empty list of groups or hosts, got {names!r}")
                continue
            bad = [
                str(name)
                for name in names
                if not (
                    name in groups or name in inventory or (key == "from" and (name == ANY or _is_subnet(str(name))))
                )
            ]
            if bad:
                what = "groups or hosts" if key == "to" else "groups, hosts, subnets or any"
                problems.append(f"{where}.{key}: {', '.join(bad)} not among the inventory's {what}")
    return problems


def _family(address: str) -> str:
    return "ip6" if ":" in address else "ip"


def _match_sources(sources: list[str]) -> list[str]:
    """One nft match per address family; [""] for any source."""
    if ANY in sources:
        return [""]
    by_family: dict[str, list[str]] = {}
    for source in sources:
        by_family.setdefault(_family(source), []).append(source)
    return [f"{family} saddr {{ {', '.join(found)} }} " for family, found in sorted(by_family.items())]


def _match_ports(protocol: str, ports: list[Any]) -> str:
    if protocol == "all":
        return ""
    return f"{protocol} dport {{ {', '.join(str(port).strip() for port in ports)} }} "


@_with_netaddr
def firewall_rules(
    openings: list[Mapping[str, Any]],
    hostvars: Mapping[str, Any],
    groups: Mapping[str, list[str]],
    host: str,
    plan: Mapping[str, Any],
) -> dict[str, list[str]]:
    """The nft rules of each traffic class on `host`: {class: [rule, ...]}, every class of the plan,
    each rule an opening that `host` is among the `to` of."""
    rules: dict[str, list[str]] = {name: [] for name in sorted(plan["networks"])}
    for opening in openings:
        if not opening.get("enabled", True) or host not in _hosts(opening["to"], groups):
            continue
        traffic_class = opening["traffic_class"]
        if traffic_class not in rules:
            raise AnsibleFilterError(
                f"firewall opening {opening.get('name')!r}: traffic class {traffic_class!r} (from its role's settings) "
                f"is not in gpulab_network.networks ({', '.join(rules) or 'none'})"
            )
        members = _hosts(opening["from"], groups)
        sources = [str(name) for name in opening["from"] if name == ANY or _is_subnet(str(name))]
        sources += node_addresses(hostvars, members, dict(plan), traffic_class).values() if members else []
        ports = _match_ports(opening.get("protocol", "tcp"), opening.get("ports") or [])
        for match in _match_sources(sources):
            rules[traffic_class].append(f'{match}{ports}accept comment "{opening["name"]}"')
    return rules


@_with_netaddr
def firewall_ruleset(
    rules: Mapping[str, list[str]],
    hostvars: Mapping[str, Any],
    host: str,
    plan: Mapping[str, Any],
    interfaces: Mapping[str, str] | None = None,
    table: str = "gpulab",
) -> str:
    """The nftables file for `host`: table inet `table`, replaced whole when loaded (nothing else touched:
    Docker's rules stay). Packets to the host's address on a class, or arriving on a class's own
    interface (`interfaces`, {class: link} of the links the network role manages; management never),
    go to that class's chain: its openings, ping, and a counted drop. Loopback and established
    connections pass; addresses outside the plan are left alone."""
    dispatch = [f'iifname "{link}" jump {name}' for name, link in sorted((interfaces or {}).items())]
    for name in rules:
        address = node_addresses(hostvars, [host], dict(plan), name)[host]
        dispatch.append(f"{_family(address)} daddr {address} jump {name}")
    lines = [
        f"table inet {table}",
        f"delete table inet {table}",
        f"table inet {table} {{",
        "\tchain input {",
        "\t\ttype filter hook input priority filter; policy accept;",
        '\t\tiif "lo" accept',
        "\t\tct state established,related accept",
        "\t\tct state invalid drop",
        *(f"\t\t{rule}" for rule in dispatch),
        "\t}",
    ]
    for name, class_rules in rules.items():
        lines += [f"\tchain {name} {{", *(f"\t\t{rule}" for rule in (*ICMP, *class_rules)), "\t\tcounter drop", "\t}"]
    return "\n".join([*lines, "}", ""])


def firewall_scrape_openings(jobs: list[Mapping[str, Any]], server: str) -> list[dict[str, Any]]:
    """The monitoring role's extra scrape jobs ({name, port, hosts}) as openings from the Prometheus host."""
    return [
        {
            "name": f"scrape {job['name']}",
            "traffic_class": "management",
            "ports": [job["port"]],
            "to": list(job["hosts"]),
            "from": [server],
            "enabled": bool(server),
        }
        for job in jobs or []
    ]


@_with_netaddr
def firewall_interfaces(
    links: list[Mapping[str, Any]], hostvars: Mapping[str, Any], host: str, plan: Mapping[str, Any]
) -> dict[str, str]:
    """{class: link} for the classes but management whose address is on one of `links` (host_links' list of
    the links the network role configures here): the VLAN, or the NIC where the class rides untagged."""
    if not isinstance(links, list):
        raise AnsibleFilterError(f"firewall_interfaces needs host_links' list of links, got {links!r}")
    on_links = {str(link["address"]).split("/", maxsplit=1)[0]: link["name"] for link in links if link.get("address")}
    found = {}
    for name in sorted(plan["networks"]):
        address = node_addresses(hostvars, [host], dict(plan), name)[host]
        if name != "management" and address in on_links:
            found[name] = on_links[address]
    return found


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "firewall_problems": firewall_problems,
            "firewall_rules": firewall_rules,
            "firewall_ruleset": firewall_ruleset,
            "firewall_scrape_openings": firewall_scrape_openings,
            "firewall_interfaces": firewall_interfaces,
        }
