#!/usr/bin/python
"""Measure TCP bandwidth and end-to-end MTU from this node to its peers, and return gpulab check records."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: net_bandwidth
short_description: Measure iperf3 bandwidth and jumbo-frame reachability from this node to its peers
description:
  - For each peer, runs an C(iperf3) client with parallel streams against the C(iperf3) server the peer runs,
    and a do-not-fragment C(ping) sized to fill the MTU exactly, one peer at a time, in the order given.
  - Every node may run it at once. A peer's server takes one test at a time and answers any other client that it
    is busy; such a peer is tried again after the others, so that each node sends to one peer and receives from
    at most one at any moment, as in a ring all-reduce. A server still busy after (peers + 1) x (I(duration) + 5)
    seconds fails its bandwidth check.
  - Reads the outgoing interface's link speed and its drop, error and pause counters before and after.
  - Bandwidth passes at I(min_gbps), or at I(min_ratio) times the line rate (I(line_rate_gbps), else the link
    speed the NIC reports). Drops that grow during the test warn; pause frames are reported only.
  - The peers must run C(iperf3 -s) on I(port); the C(validate) playbook starts and stops them.
  - A missing C(iperf3) or C(ping) is reported as C(unavailable), not as a fault.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  peers:
    description: The nodes to measure against, each C({name, address}).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The peer's name in the records.
        type: str
        required: true
      address:
        description: The address its iperf3 server listens on (on the traffic class being tested).
        type: str
        required: true
  interface:
    description: The local interface the traffic leaves by; found with C(ip route get) when unset.
    type: str
  mtu:
    description: The MTU the path must carry; the interface's MTU when unset.
    type: int
  line_rate_gbps:
    description: The line rate to judge bandwidth against; the interface's reported link speed when unset.
    type: float
  min_ratio:
    description: Pass when the measured bandwidth is at least this fraction of the line rate (the peers use 0.9).
    type: float
    default: 0.9
  min_gbps:
    description: An absolute pass mark in Gbit/s, instead of I(min_ratio) times the line rate.
    type: float
  streams:
    description: Parallel TCP streams (C(iperf3 -P)); one stream cannot fill 100 Gbit/s.
    type: int
    default: 4
  duration:
    description: Seconds per iperf3 test.
    type: int
    default: 5
  port:
    description: The peers' iperf3 server port.
    type: int
    default: 5201
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: Measure every other compute node on the compute network, every node at once
  gpulab.cluster.net_bandwidth:
    peers: "{{ hostvars | gpulab.cluster.node_addresses(__others, gpulab_network, 'compute')
               | dict2items(key_name='name', value_name='address') }}"
    line_rate_gbps: 100
  vars:
    # From the next node on: at the start every node sends to a different peer.
    __me: "{{ groups['compute'].index(inventory_hostname) }}"
    __others: "{{ groups['compute'][__me | int + 1:] + groups['compute'][:__me | int] }}"

- name: Against one address, with a fixed pass mark
  gpulab.cluster.net_bandwidth:
    peers: [{name: stor1, address: 10.0.30.2}]
    mtu: 9000
    min_gbps: 40
"""

RETURN = r"""
checks:
  description: Records C(bandwidth.PEER) and C(mtu.PEER) per peer, then C(link_speed), C(drops), C(pause_frames).
  returned: always
  type: list
  elements: dict
status:
  description: Worst status among the checks.
  returned: always
  type: str
results:
  description: Per peer - name, address, sent_gbps, received_gbps, retransmits, streams, path_mtu, ping_received.
  returned: always
  type: list
  elements: dict
  sample: [{name: gpu2, address: 172.30.10.14, sent_gbps: 23.1, received_gbps: 23.0, retransmits: 0}]
interface:
  description: The interface measured, its MTU, link speed (Gbit/s) and counter growth during the tests.
  returned: always
  type: dict
  sample: {name: eth0, mtu: 9000, speed_gbps: 100, counter_deltas: {rx_dropped: 0}}
"""

import collections
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import net_tests as nt
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import POSITIVE, SHARE, start
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import exit_with_records, unavailable

SYS_NET = "/sys/class/net"


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):  # a down link's speed read fails with EINVAL
        return None


def _route_interface(module: AnsibleModule, address: str) -> str | None:
    ip = module.get_bin_path("ip")
    if not ip:
        return None
    rc, out, _err = module.run_command([ip, "-j", "route", "get", address])
    try:
        return json.loads(out)[0]["dev"] if rc == 0 else None
    except (ValueError, LookupError, TypeError):
        return None


def _counters(module: AnsibleModule, interface: str) -> dict[str, int]:
    stats_dir = os.path.join(SYS_NET, interface, "statistics")
    counters = {}
    if os.path.isdir(stats_dir):
        for name in os.listdir(stats_dir):
            value = _read_int(os.path.join(stats_dir, name))
            if value is not None:
                counters[name] = value
    ethtool = module.get_bin_path("ethtool")
    if ethtool:
        rc, out, _err = module.run_command([ethtool, "-S", interface])
        if rc == 0:
            counters.update(nt.parse_ethtool_stats(out))
    return counters


def _iperf3(module: AnsibleModule, peer: dict, iperf3: str) -> tuple[int, str, str]:
    """One client run against the peer's server: (rc, JSON output, stderr)."""
    p = module.params
    # The timeout bounds a server that accepts but never answers.
    cmd = [iperf3, "-c", peer["address"], "-p", str(p["port"]), "-P", str(p["streams"]), "-t", str(p["duration"])]
    cmd = ["timeout", str(p["duration"] + 20), *cmd, "-J", "--connect-timeout", "5000"]
    rc, out, err = module.run_command(cmd)
    if not out.strip():
        # iperf3 3.11 and 3.12 (Debian 12's) end a failed client run under -J with rc 0 and print nothing
        # (esnet/iperf#1405): once more, so that a passing moment's failure is not the verdict.
        time.sleep(1)
        rc, out, err = module.run_command(cmd)
    return rc, out, err


def _bandwidths(module: AnsibleModule, iperf3: str) -> dict[str, dict]:
    """Peer name -> {iperf, iperf_error}. A peer whose server is busy with another node's test goes to the back
    of the queue; when every peer left was busy in a row, wait half a second before the next round."""
    p = module.params
    found: dict[str, dict] = {}
    queue = collections.deque(p["peers"])
    started = time.monotonic()
    give_up = started + (len(p["peers"]) + 1) * (p["duration"] + 5)
    busy_in_a_row = 0
    while queue:
        peer = queue.popleft()
        rc, out, err = _iperf3(module, peer, iperf3)
        busy = nt.SERVER_BUSY in out
        if busy and time.monotonic() < give_up:
            queue.append(peer)
            busy_in_a_row += 1
            if busy_in_a_row >= len(queue):
                time.sleep(0.5)
                busy_in_a_row = 0
            continue
        busy_in_a_row = 0
        try:
            found[peer["name"]] = {"iperf": nt.parse_iperf3(out), "iperf_error": None}
        except nt.NetParseError as exc:
            if busy:
                said = f"its server was still busy with other tests after {time.monotonic() - started:.0f} s"
            else:
                said = "iperf3 printed nothing, twice" if not out.strip() else f"{exc}: {out.strip()[:120]!r}"
            found[peer["name"]] = {
                "iperf": None,
                "iperf_error": f"{said} (rc {rc}{'; ' + err.strip() if err.strip() else ''})",
            }
    return found


def _path_mtu(module: AnsibleModule, peer: dict, ping: str, mtu: int) -> dict:
    """{ping, ping_error}: a do-not-fragment ping sized to fill the MTU."""
    rc, out, err = module.run_command(
        [ping, "-M", "do", "-s", str(nt.ping_payload(mtu)), "-c", "3", "-i", "0.05", "-W", "2", peer["address"]]
    )
    try:
        return {"ping": nt.parse_ping(out + "\n" + err), "ping_error": None}
    except nt.NetParseError as exc:
        return {"ping": None, "ping_error": f"{exc} (rc {rc}; {err.strip() or out.strip()[-200:]})"}


ARGUMENT_SPEC = dict(
    peers=dict(
        type="list",
        elements="dict",
        required=True,
        options=dict(name=dict(type="str", required=True), address=dict(type="str", required=True)),
    ),
    interface=dict(type="str"),
    mtu=dict(type="int"),
    line_rate_gbps=dict(type="float"),
    min_ratio=dict(type="float", default=0.9),
    min_gbps=dict(type="float"),
    streams=dict(type="int", default=4),
    duration=dict(type="int", default=5),
    port=dict(type="int", default=5201),
)
BOUNDS = {
    "line_rate_gbps": POSITIVE,
    "min_gbps": POSITIVE,
    "streams": POSITIVE,
    "duration": POSITIVE,
    "mtu": POSITIVE,
    "min_ratio": SHARE,
}
IPV4_MIN_MTU = 576


def input_problem(p: dict) -> str | None:
    """The first setting BOUNDS cannot say that cannot be used, as a message naming it; None when all can."""
    if not p["peers"]:
        return "peers is empty: name at least one node to measure against"
    if p["mtu"] is not None and p["mtu"] < IPV4_MIN_MTU:
        return f"mtu must be at least {IPV4_MIN_MTU} (the IPv4 minimum), got {p['mtu']}"
    return None


def main() -> None:
    module = start(ARGUMENT_SPEC, input_problem, BOUNDS, mutually_exclusive=[("min_gbps", "min_ratio")])
    p = module.params

    iperf3, ping = module.get_bin_path("iperf3"), module.get_bin_path("ping")
    missing = [tool for tool, path in (("iperf3", iperf3), ("ping", ping)) if not path]
    if missing:
        record = unavailable(
            "net_tools",
            f"{' and '.join(missing)} not installed on {os.uname().nodename}; the validate playbook installs them",
            code="NET_TOOLS_MISSING",
        )
        exit_with_records(module, [record], results=[], interface={})

    interface = p["interface"] or _route_interface(module, p["peers"][0]["address"])
    if not interface:
        module.fail_json(msg=f"could not find the interface towards {p['peers'][0]['address']}; set interface")
    mtu = p["mtu"] or _read_int(os.path.join(SYS_NET, interface, "mtu")) or 1500
    speed_mbps = _read_int(os.path.join(SYS_NET, interface, "speed"))
    line_rate = p["line_rate_gbps"] or (speed_mbps / 1000 if speed_mbps and speed_mbps > 0 else None)
    min_gbps = p["min_gbps"] if p["min_gbps"] is not None else (p["min_ratio"] * line_rate if line_rate else None)

    before = _counters(module, interface)
    bandwidths = _bandwidths(module, iperf3)
    measured = [
        {
            "name": peer["name"],
            "address": peer["address"],
            **bandwidths[peer["name"]],
            **_path_mtu(module, peer, ping, mtu),
        }
        for peer in p["peers"]
    ]
    deltas = nt.counter_deltas(before, _counters(module, interface))

    records = []
    for m in measured:
        records += nt.evaluate_peer(m["name"], m["iperf"], m["iperf_error"], m["ping"], m["ping_error"], mtu, min_gbps)
    records.append(nt.evaluate_link(interface, speed_mbps, p["line_rate_gbps"]))
    records += nt.evaluate_counters(interface, deltas)
    results = [
        {
            "name": m["name"],
            "address": m["address"],
            **(m["iperf"] or {"sent_gbps": None, "received_gbps": None, "retransmits": None}),
            "path_mtu": (m["ping"] or {}).get("path_mtu"),
            "ping_received": (m["ping"] or {}).get("received"),
        }
        for m in measured
    ]
    speed_gbps = speed_mbps / 1000 if speed_mbps and speed_mbps > 0 else None
    info = {"name": interface, "mtu": mtu, "speed_gbps": speed_gbps, "counter_deltas": deltas}
    exit_with_records(module, records, results=results, interface=info, min_gbps=min_gbps)


if __name__ == "__main__":
    main()
