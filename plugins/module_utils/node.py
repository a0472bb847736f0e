"""Parse what a node says of its clock (`chronyc tracking`) and its links (`ip -j addr`), and judge them.

Pure functions: the node_health module runs the commands and hands their output here.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import Check, failed, passed, said

# chronyc tracking's "System time : 0.000001234 seconds slow of NTP time": how far the system clock is off.
SYSTEM_TIME = re.compile(r"^System time\s*:\s*([0-9.]+) seconds (fast|slow) of NTP time\s*$", re.MULTILINE)
FIELD = re.compile(r"^([A-Za-z ()]+?)\s*:\s*(.*?)\s*$", re.MULTILINE)


class NodeParseError(ValueError):
    """Output that is not what the tool prints."""


def parse_chrony_tracking(text: str) -> dict[str, Any]:
    """`chronyc -n tracking` -> {reference, stratum, offset_s (positive: fast), leap}."""
    fields = dict(FIELD.findall(text))
    offset = SYSTEM_TIME.search(text)
    if offset is None or "Leap status" not in fields:
        raise NodeParseError(f"not chronyc tracking output: {text.strip()[:120]!r}")
    seconds = float(offset.group(1))
    return {
        "reference": fields.get("Reference ID", ""),
        "stratum": int(fields["Stratum"]) if fields.get("Stratum", "").isdigit() else None,
        "offset_s": seconds if offset.group(2) == "fast" else -seconds,
        "leap": fields["Leap status"],
    }


def clock_record(rc: int, out: str, err: str, offset_max_ms: float) -> Check:
    """The node's clock as chronyc reports it: synchronised, and within offset_max_ms of its source."""
    if rc != 0:
        return failed(
            "clock", f"chronyd does not answer ({said(rc, out, err)}): nothing keeps this clock", code="CLOCK_UNSYNCED"
        )
    try:
        tracking = parse_chrony_tracking(out)
    except NodeParseError as exc:
        return failed("clock", str(exc), code="CLOCK_UNSYNCED")
    if tracking["leap"] == "Not synchronised":
        return failed(
            "clock",
            f"chrony has no time source it trusts (reference {tracking['reference']}): the clock drifts freely",
            code="CLOCK_UNSYNCED",
        )
    offset_ms = round(tracking["offset_s"] * 1000, 3)
    way = "fast" if offset_ms >= 0 else "slow"
    reading = f"{abs(offset_ms):g} ms {way} of its time source ({tracking['reference']}, stratum {tracking['stratum']})"
    if abs(offset_ms) > offset_max_ms:
        return failed(
            "clock",
            f"the clock is {reading}, more than {offset_max_ms:g} ms: Ceph's monitors and munge credentials depend on "
            "agreeing clocks",
            value=offset_ms,
            threshold=offset_max_ms,
            unit="ms",
            code="CLOCK_SKEW",
        )
    return passed("clock", f"the clock is {reading}", value=offset_ms, threshold=offset_max_ms, unit="ms")


def parse_ip_addr(text: str) -> dict[str, tuple[str, int]]:
    """`ip -j addr show` -> {address: (interface, mtu)}."""
    try:
        links = json.loads(text)
        return {
            str(ipaddress.ip_address(info["local"])): (link["ifname"], int(link["mtu"]))
            for link in links
            for info in link.get("addr_info", [])
            if "local" in info
        }
    except (ValueError, KeyError, TypeError) as exc:
        raise NodeParseError(f"not ip -j addr output: {exc}") from exc


def mtu_records(addresses: dict[str, tuple[str, int]], links: list[dict[str, Any]]) -> list[Check]:
    """Each planned link ({traffic_class, address, mtu}) found on an interface with the plan's MTU."""
    records = []
    for link in links:
        check = f"mtu.{link['traffic_class']}"
        where = f"{link['traffic_class']} ({link['address']})"
        found = addresses.get(str(ipaddress.ip_address(link["address"])))
        if found is None:
            records.append(failed(check, f"no interface holds this node's {where} address", code="NET_ADDRESS_MISSING"))
            continue
        name, mtu = found
        if mtu != link["mtu"]:
            records.append(
                failed(
                    check,
                    f"{name} on {where} has MTU {mtu}; the plan's is {link['mtu']}: frames between this node and "
                    "the others are dropped or fragmented",
                    value=mtu,
                    threshold=link["mtu"],
                    code="NET_MTU",
                )
            )
        else:
            records.append(passed(check, f"{name} on {where} has the plan's MTU {mtu}", value=mtu, threshold=mtu))
    return records
