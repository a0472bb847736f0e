"""Parse RDMA port state, GID tables and PFC/DSCP settings, and judge them against the network plan.

Sources: sysfs (/sys/class/infiniband/DEV/ports/N/{state,phys_state,link_layer,rate,gids,gid_attrs}),
`ibv_devinfo` (active MTU), `dcb -j pfc|app show` (iproute2) and `mlnx_qos -i IFACE` (NVIDIA tools).
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import (
    Check,
    at_least,
    failed,
    passed,
    unavailable,
    warned,
)

ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


class RdmaParseError(ValueError):
    """Output that is not what the tool prints."""


def sysfs_state(text: str) -> str:
    """'4: ACTIVE' -> 'ACTIVE'; '5: LinkUp' -> 'LinkUp'."""
    return text.strip().partition(": ")[2] or text.strip()


def parse_rate(text: str) -> float | None:
    """sysfs rate '100 Gb/sec (4X EDR)' or '2.5 Gb/sec (1X SDR)' -> Gbit/s."""
    match = re.match(r"\s*([\d.]+) Gb/sec", text)
    return float(match.group(1)) if match else None


def parse_ibv_devinfo(text: str) -> dict[str, dict[int, dict[str, str]]]:
    """`ibv_devinfo` -> {device: {port: {state, max_mtu, active_mtu, link_layer}}}.

    MTU lines read '4096 (5)': the byte count is kept.
    """
    devices: dict[str, dict[int, dict[str, str]]] = {}
    device = port = None
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            device, port = value, None
            devices[device] = {}
        elif key == "port" and device is not None:
            port = int(value)
            devices[device][port] = {}
        elif port is not None and key in ("state", "max_mtu", "active_mtu", "link_layer"):
            devices[device][port][key] = value.split(" ")[0]
    if not devices and text.strip() and "No IB devices found" not in text:
        raise RdmaParseError("ibv_devinfo printed no hca_id line")
    return devices


def roce_v2_gid(gids: list[dict[str, Any]], netdev: str | None = None) -> dict[str, Any] | None:
    """The RoCE v2 GID carrying an IPv4 address (::ffff:a.b.c.d), on `netdev` when given.

    gids: [{index, gid, type, ndev}] as read from sysfs; NCCL_IB_GID_INDEX wants this index.
    """
    for entry in sorted(gids, key=lambda g: g["index"]):
        if entry.get("type") != "RoCE v2" or entry.get("gid") in (None, ZERO_GID):
            continue
        if netdev and entry.get("ndev") != netdev:
            continue
        try:
            address = ipaddress.IPv6Address(entry["gid"])
        except ValueError:
            continue
        if address.ipv4_mapped:
            return {**entry, "ipv4": str(address.ipv4_mapped)}
    return None


def parse_dcb_pfc(text: str) -> list[int]:
    """`dcb -j pfc show dev IFACE` -> priorities with PFC enabled.

    prio_pfc is printed as a list of 8 booleans (iproute2 6.x); an object keyed by priority is accepted too.
    """
    data = _json_object(text, "dcb pfc")
    prio = data.get("prio_pfc")
    if isinstance(prio, list):
        return [i for i, on in enumerate(prio) if on]
    if isinstance(prio, dict):
        return sorted(int(k) for k, on in prio.items() if on)
    raise RdmaParseError("dcb pfc output has no prio_pfc")


def parse_dcb_app(text: str) -> dict[int, int]:
    """`dcb -j app show dev IFACE dscp-prio` -> {dscp: priority}. Entries are [dscp, prio] pairs."""
    data = _json_object(text, "dcb app")
    mapping = {}
    for entry in data.get("dscp_prio") or []:
        if isinstance(entry, list) and len(entry) == 2:
            mapping[int(entry[0])] = int(entry[1])
        elif isinstance(entry, dict) and {"dscp", "prio"} <= entry.keys():
            mapping[int(entry["dscp"])] = int(entry["prio"])
    return mapping


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RdmaParseError(f"{what} output is not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise RdmaParseError(f"{what} output is not a JSON object")
    return data


def parse_mlnx_qos(text: str) -> dict[str, Any]:
    """`mlnx_qos -i IFACE` -> {trust, pfc: [enabled priorities], dscp_prio: {dscp: prio}}."""
    trust = re.search(r"Priority trust state:\s*(\w+)", text)
    enabled = re.search(r"^\s*enabled\s+((?:[01]\s*){8})", text, re.MULTILINE)
    if not trust and not enabled:
        raise RdmaParseError("mlnx_qos printed neither a trust state nor a PFC table")
    dscp_prio = {}
    for prio, dscps in re.findall(r"prio:(\d)\s+dscp:([\d,]+)", text):
        for dscp in filter(None, dscps.split(",")):
            dscp_prio[int(dscp)] = int(prio)
    pfc = [i for i, flag in enumerate(enabled.group(1).split()) if flag == "1"] if enabled else []
    return {"trust": trust.group(1) if trust else None, "pfc": pfc, "dscp_prio": dscp_prio}


def evaluate_port(
    device: str,
    port: int,
    info: dict[str, Any],
    link_layer: str,
    min_mtu: int | None,
    min_rate_gbps: float | None,
) -> list[Check]:
    """State, physical state, link layer, active MTU and rate of one port."""
    name = f"{device}/{port}"
    records = []
    state, phys = info.get("state"), info.get("phys_state")
    if state == "ACTIVE":
        records.append(passed(f"port_state.{name}", f"{name} is ACTIVE ({phys})", value=state))
    else:
        hint = "no cable or switch port down" if phys in ("Disabled", "Polling") else "no subnet manager?"
        if info.get("link_layer") == "Ethernet":
            hint = "the netdev behind it is down"
        records.append(
            failed(f"port_state.{name}", f"{name} is {state} ({phys}): {hint}", value=state, code="RDMA_PORT_DOWN")
        )
    found_layer = info.get("link_layer")
    if found_layer and found_layer.lower() != link_layer.lower():
        records.append(
            failed(
                f"link_layer.{name}",
                f"{name} runs {found_layer}, the plan expects {link_layer}; set the port type (mlxconfig LINK_TYPE)",
                value=found_layer,
                threshold=link_layer,
                code="RDMA_LINK_LAYER",
            )
        )
    else:
        records.append(passed(f"link_layer.{name}", f"{name} link layer {found_layer}", value=found_layer))
    if min_mtu is not None:
        mtu = info.get("active_mtu")
        if mtu is None:
            records.append(unavailable(f"active_mtu.{name}", "ibv_devinfo not installed: active MTU unknown"))
        else:
            records.append(at_least(f"active_mtu.{name}", int(mtu), min_mtu, "bytes", f"{name} active MTU"))
    if min_rate_gbps is not None:
        records.append(at_least(f"rate.{name}", info.get("rate_gbps"), min_rate_gbps, "Gbit/s", f"{name} rate"))
    return records


def evaluate_gid(gid: dict[str, Any] | None, netdev: str | None) -> Check:
    if gid is None:
        where = f" on {netdev}" if netdev else ""
        return failed(
            "roce_v2_gid",
            f"no RoCE v2 GID with an IPv4 address{where}: give the interface an IPv4 address and check "
            "that the RDMA device is bound to it (rdma link)",
            code="RDMA_NO_GID",
        )
    return passed(
        "roce_v2_gid",
        f"RoCE v2 GID index {gid['index']} ({gid['ipv4']} on {gid['ndev']}): use NCCL_IB_GID_INDEX={gid['index']}",
        value=gid["index"],
    )


def evaluate_qos(
    pfc: list[int] | None, dscp_prio: dict[int, int] | None, trust: str | None, priority: int, dscp: int, source: str
) -> list[Check]:
    """PFC on the RoCE priority only, and the RoCE DSCP mapped to that priority. Called where the fabric
    declares RoCE: PFC that cannot be read is a failure, since nothing shows the traffic is lossless."""
    if pfc is None:
        return [
            failed(
                "pfc",
                f"{source}: PFC state could not be read, and RoCE needs PFC on priority {priority}; "
                "install dcb (iproute2) or mlnx_qos, or set rdma_qos_tool: none where no NIC has DCB (Soft-RoCE)",
                threshold=priority,
                code="RDMA_PFC_UNREAD",
            )
        ]
    records = []
    if priority in pfc:
        records.append(passed("pfc", f"PFC enabled on priority {priority} ({source})", value=pfc, threshold=priority))
    else:
        records.append(
            failed(
                "pfc",
                f"PFC is not enabled on priority {priority}, which carries RoCE (enabled: {pfc or 'none'}); "
                "RoCE without PFC drops packets under congestion. Rerun the rdma role",
                value=pfc,
                threshold=priority,
                code="RDMA_PFC",
            )
        )
        return records
    others = [p for p in pfc if p != priority]
    if others:
        records.append(
            warned("pfc_other", f"PFC also enabled on {others}: pause frames there can stall other traffic", value=pfc)
        )
    if trust is not None and trust != "dscp":
        records.append(failed("trust", f"trust state is {trust}; RoCEv2 needs dscp", value=trust, code="RDMA_TRUST"))
    mapped = (dscp_prio or {}).get(dscp)
    if mapped == priority:
        records.append(passed("dscp", f"DSCP {dscp} maps to priority {priority}", value=mapped, threshold=priority))
    else:
        records.append(
            failed(
                "dscp",
                f"DSCP {dscp} (RoCE traffic) maps to priority {mapped if mapped is not None else 'none'}, "
                f"not {priority}: RoCE packets miss the lossless queue",
                value=mapped,
                threshold=priority,
                code="RDMA_DSCP",
            )
        )
    return records
