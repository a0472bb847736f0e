"""Parse iperf3 JSON, do-not-fragment ping output and interface counters, and judge them.

Pure functions: the net_bandwidth module runs the tools and hands their output here.
"""

from __future__ import annotations

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

# Counters whose growth during a test means lost packets (sysfs statistics names).
DROP_COUNTERS = ("rx_dropped", "tx_dropped", "rx_errors", "tx_errors", "rx_crc_errors", "rx_missed_errors")
# Pause frames: normal on a PFC fabric under load, so reported, not judged. Names differ by driver
# (mlx5: rx_pause_ctrl_phy, per-priority rx_prio3_pause; many others: rx_pause_frames / tx_pause).
PAUSE_COUNTER = re.compile(r"^(rx|tx)_(prio\d_)?pause(_ctrl_phy|_frames)?$")
# IPv4 + ICMP headers: the ICMP payload that fills a packet of exactly the MTU.
IPV4_ICMP_HEADERS = 28
# What an iperf3 server answers a client while it serves another ("the server is busy running a test. try again later").
SERVER_BUSY = "the server is busy"


class NetParseError(ValueError):
    """Output that is not what the tool prints (truncated, garbage, an error page)."""


def parse_iperf3(text: str) -> dict[str, Any]:
    """iperf3 -J client output -> {sent_gbps, received_gbps, retransmits, streams, seconds}.

    iperf3 reports failures inside the JSON as {"error": "..."}; that becomes NetParseError.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NetParseError(f"iperf3 output is not JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise NetParseError("iperf3 output is not a JSON object")
    if data.get("error"):
        raise NetParseError(f"iperf3 reported: {data['error']}")
    end = data.get("end") or {}
    sent, received = end.get("sum_sent"), end.get("sum_received")
    if not isinstance(sent, dict) or not isinstance(received, dict):
        raise NetParseError("iperf3 output has no end.sum_sent/sum_received: the test did not finish")
    start = data.get("start") or {}
    return {
        "sent_gbps": round(float(sent["bits_per_second"]) / 1e9, 3),
        "received_gbps": round(float(received["bits_per_second"]) / 1e9, 3),
        "retransmits": sent.get("retransmits"),
        "streams": (start.get("test_start") or {}).get("num_streams"),
        "seconds": round(float(received.get("seconds", 0.0)), 2),
    }


_PING_SUMMARY = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")
_PING_TOO_BIG = re.compile(r"message too long, mtu=(\d+)|frag needed and DF set \(mtu = (\d+)\)", re.IGNORECASE)


def parse_ping(text: str) -> dict[str, Any]:
    """iputils ping -M do output -> {transmitted, received, path_mtu}; path_mtu when a hop was too small."""
    summary = _PING_SUMMARY.search(text)
    too_big = _PING_TOO_BIG.search(text)
    if not summary and not too_big:
        raise NetParseError("ping printed no packet summary")
    return {
        "transmitted": int(summary.group(1)) if summary else 0,
        "received": int(summary.group(2)) if summary else 0,
        "path_mtu": int(too_big.group(1) or too_big.group(2)) if too_big else None,
    }


def parse_ethtool_stats(text: str) -> dict[str, int]:
    """`ethtool -S IFACE` -> {counter: value}; lines that are not `name: integer` are skipped."""
    counters = {}
    for line in text.splitlines():
        name, sep, value = line.strip().partition(":")
        if sep and value.strip().lstrip("-").isdigit():
            counters[name.strip()] = int(value)
    return counters


def counter_deltas(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Growth of each counter present in both samples (a counter reset counts as 0)."""
    return {k: max(after[k] - before[k], 0) for k in sorted(before.keys() & after.keys())}


def ping_payload(mtu: int) -> int:
    return mtu - IPV4_ICMP_HEADERS


def evaluate_peer(
    peer: str,
    iperf: dict[str, Any] | None,
    iperf_error: str | None,
    ping: dict[str, Any] | None,
    ping_error: str | None,
    mtu: int,
    min_gbps: float | None,
) -> list[Check]:
    """Bandwidth and end-to-end MTU records for one peer."""
    records = []
    name = f"bandwidth.{peer}"
    if iperf is None:
        records.append(failed(name, f"iperf3 to {peer} failed: {iperf_error}", unit="Gbit/s", code="NET_IPERF"))
    elif min_gbps is None:
        gbps = iperf["received_gbps"]
        records.append(
            passed(name, f"TCP to {peer} {gbps:g} Gbit/s (no line rate to judge by)", value=gbps, unit="Gbit/s")
        )
    else:
        records.append(at_least(name, iperf["received_gbps"], min_gbps, "Gbit/s", f"TCP to {peer}", code="NET_BW"))
    name = f"mtu.{peer}"
    if ping is None:
        records.append(failed(name, f"ping to {peer} failed: {ping_error}", threshold=mtu, code="NET_PING"))
    elif ping["path_mtu"] is not None:
        records.append(
            failed(
                name,
                f"{mtu}-byte packets to {peer} do not fit: a hop allows only {ping['path_mtu']}; "
                "set the same MTU on both hosts and every switch port between them",
                value=ping["path_mtu"],
                threshold=mtu,
                unit="bytes",
                code="NET_MTU",
            )
        )
    elif ping["received"] == 0:
        records.append(
            failed(
                name,
                f"no {mtu}-byte do-not-fragment ping to {peer} came back "
                f"({ping['transmitted']} sent): a hop drops jumbo frames, or {peer} is unreachable",
                value=0,
                threshold=mtu,
                unit="bytes",
                code="NET_MTU",
            )
        )
    else:
        records.append(
            passed(
                name,
                f"{mtu}-byte do-not-fragment packets reach {peer} ({ping['received']}/{ping['transmitted']})",
                value=mtu,
                threshold=mtu,
                unit="bytes",
            )
        )
    return records


def evaluate_link(interface: str, speed_mbps: int | None, expected_gbps: float | None) -> Check:
    """The local interface's negotiated speed against the expected line rate."""
    if speed_mbps is None or speed_mbps <= 0:
        return unavailable("link_speed", f"{interface} reports no link speed (virtual NIC or link down)", unit="Gbit/s")
    gbps = speed_mbps / 1000
    if expected_gbps is None:
        return passed("link_speed", f"{interface} runs at {gbps:g} Gbit/s", value=gbps, unit="Gbit/s")
    return at_least("link_speed", gbps, expected_gbps, "Gbit/s", f"{interface} link speed", code="NET_LINK_SPEED")


def evaluate_counters(interface: str, deltas: dict[str, int]) -> list[Check]:
    """Drops/errors that grew during the tests warn; pause frames are reported as seen."""
    drops = {k: v for k, v in deltas.items() if k in DROP_COUNTERS and v}
    pauses = sum(v for k, v in deltas.items() if PAUSE_COUNTER.match(k))
    records = []
    if not deltas:
        records.append(unavailable("drops", f"no counters could be read for {interface}"))
    elif drops:
        listed = ", ".join(f"{k} +{v}" for k, v in drops.items())
        records.append(
            warned(
                "drops",
                f"{interface} counted drops or errors during the tests ({listed}); check cables, "
                "NIC ring sizes and, on RoCE, that PFC is enabled on both ends",
                value=sum(drops.values()),
                threshold=0,
                code="NET_DROPS",
            )
        )
    else:
        records.append(passed("drops", f"no drops or errors on {interface} during the tests", value=0, threshold=0))
    records.append(passed("pause_frames", f"{pauses} pause frames on {interface} during the tests", value=pauses))
    return records
