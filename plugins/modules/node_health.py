#!/usr/bin/python
"""Check a node's clock against its time source, the MTU of its planned links and, on the UPS host, the UPS."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_health
short_description: Check a node's clock (chrony), that each planned link has the plan's MTU, and the UPS (NUT)
description:
  - C(clock) - C(chronyc -n tracking) - fails when chronyd does not answer or trusts no time source
    (C(CLOCK_UNSYNCED)), and when the system clock is more than I(clock_offset_max_ms) off its source
    (C(CLOCK_SKEW)). Without chrony the record is C(unavailable).
  - C(mtu.CLASS) per entry of I(links) - C(ip -j addr) - the interface holding the address must have the MTU;
    another MTU fails (C(NET_MTU)), an address no interface holds fails (C(NET_ADDRESS_MISSING)). A node whose
    MTU differs from the others' drops or fragments frames between them, which no single ping from it shows.
  - C(ups) with I(ups) - C(upsc) - on line passes; on battery (C(UPS_ON_BATTERY)), low battery or a forced shutdown
    (C(UPS_LOW_BATTERY)) and a UPS that cannot be read (C(UPS_UNREACHABLE)) fail.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  clock_offset_max_ms:
    description: Milliseconds the clock may be off its time source. Ceph's monitors warn past 50 ms.
    type: float
    default: 50
  links:
    description: The node's planned addresses, each with its traffic class and MTU (the validation role derives them
      from C(gpulab_network)). Empty checks no MTU.
    type: list
    elements: dict
    default: []
    suboptions:
      traffic_class:
        description: The traffic class, for the record's name.
        type: str
        required: true
      address:
        description: This node's address on it.
        type: str
        required: true
      mtu:
        description: The MTU the plan gives it.
        type: int
        required: true
  ups:
    description: The UPS as C(upsc) names it (C(ups@127.0.0.1) on the node that runs upsd). Unset checks no UPS.
    type: str
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: Clock and links of every node
  gpulab.cluster.node_health:
    clock_offset_max_ms: 50
    links:
      - {traffic_class: management, address: 10.0.10.11, mtu: 1500}
      - {traffic_class: compute, address: 10.0.20.11, mtu: 9000}
    ups: ups@127.0.0.1  # on the UPS host
  register: node
"""

RETURN = r"""
status:
  description: Worst status among the checks.
  returned: always
  type: str
checks:
  description: Records C(clock) (its value the offset in ms, positive when fast), C(mtu.CLASS) per link and, with
    I(ups), C(ups) (its value the battery charge in percent).
  returned: always
  type: list
  elements: dict
"""

import ipaddress

from ansible_collections.gpulab.cluster.plugins.module_utils import node, ups
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import NOT_NEGATIVE, start
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import exit_with_records, failed, said, unavailable

ARGUMENT_SPEC = dict(
    clock_offset_max_ms=dict(type="float", default=50.0),
    links=dict(
        type="list",
        elements="dict",
        default=[],
        options=dict(
            traffic_class=dict(type="str", required=True),
            address=dict(type="str", required=True),
            mtu=dict(type="int", required=True),
        ),
    ),
    ups=dict(type="str"),
)
BOUNDS = {"clock_offset_max_ms": NOT_NEGATIVE}
TIMEOUT = ["timeout", "10"]  # chronyc and upsc wait for their daemon's answer; a hung daemon is a finding


def input_problem(p: dict) -> str | None:
    for i, link in enumerate(p["links"]):
        try:
            ipaddress.ip_address(link["address"])
        except ValueError:
            return f"links[{i}].address must be an IP address, got {link['address']!r}"
        if not 68 <= link["mtu"] <= 65535:
            return f"links[{i}].mtu must be 68-65535, got {link['mtu']}"
    return None


def main() -> None:
    module = start(ARGUMENT_SPEC, input_problem, BOUNDS)
    p = module.params
    records = []
    chronyc = module.get_bin_path("chronyc")
    if chronyc:
        rc, out, err = module.run_command([*TIMEOUT, chronyc, "-n", "tracking"])
        records.append(node.clock_record(rc, out, err, p["clock_offset_max_ms"]))
    else:
        records.append(unavailable("clock", "chronyc is not installed: the common role keeps time with chrony"))
    if p["links"]:
        rc, out, err = module.run_command(["ip", "-j", "addr", "show"])
        try:
            addresses = node.parse_ip_addr(out) if rc == 0 else None
        except node.NodeParseError as exc:
            addresses, err = None, str(exc)
        if addresses is None:
            records.append(failed("mtu", f"ip addr could not be read: {said(rc, out, err)}"))
        else:
            records += node.mtu_records(addresses, p["links"])
    if p["ups"]:
        upsc = module.get_bin_path("upsc")
        if upsc:
            records.append(ups.ups_record(*module.run_command([*TIMEOUT, upsc, p["ups"]]), p["ups"]))
        else:
            # Could not check (check mode before the ups role installed NUT), not a fault of the UPS.
            records.append(unavailable("ups", "upsc is not installed: the ups role is not applied here"))
    exit_with_records(module, records)


if __name__ == "__main__":
    main()
