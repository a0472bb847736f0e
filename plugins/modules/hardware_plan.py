#!/usr/bin/python
"""Size a cluster before it is bought: power, circuits, UPS, heat, PCIe, NIC slots, switch ports, cost."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hardware_plan
short_description: Size power, circuits, UPS runtime, heat, PCIe lanes, switch ports and cost from a hardware list
description:
  - Needs no nodes; run it on the controller. From I(plan) it computes per node and in total the peak, typical
    and idle power, PSU headroom, the current on each circuit against the share of its breaker it carries
    continuously, UPS runtime, heat (W and BTU/h), PCIe lanes against the CPU's, each NIC's slot against its
    port speed, GPUs and NIC on the same NUMA node where the plan says where they sit, switch ports (with
    breakouts) against the nodes' links with room to grow, the bus bandwidth each link speed carries, Ceph's
    usable capacity, and the 3-year cost against cloud GPU-hours with the break-even month.
  - GPU and NIC figures come from the planner's table (C(module_utils/sizing.py), each entry naming its source);
    every assumption (the 80 % continuous load of a breaker, a training GPU's share of its limit, ...) is shown
    and overridable under C(assumptions).
  - A plan it cannot size (an unknown GPU or NIC model, a node on a circuit the plan lacks, a count or voltage
    that cannot be) is refused naming the setting.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  plan:
    description:
      - "C(nodes) (name to C({count, gpu: {model, count, power_limit_w}, cpu: {tdp_w, pcie_lanes}, base_w, psu_w,
        nic: {model, speed_gbps, slot_lanes, slot_gen, links}, nvme, circuit, numa: {gpus, nic}})), C(circuits)
        (name to C({volts, breaker_amps, other_w})), C(ups) (C({capacity_wh, max_w, min_runtime_min})), C(switch)
        (C({ports, breakout, uplinks})), C(ceph) (C({raw_tb, replication})), C(cost) (C({price_per_kwh,
        cloud_gpu_hour, utilization, hardware_cost, years, currency})) and C(assumptions). Only C(nodes) is
        required; a section left out is not sized. A node's C(hosts) (an inventory group or host) is completed
        from the inventory by playbooks/plan.yml before this module sees it. See docs/hardware-planning.md."
    type: dict
    required: true
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: Size the cluster in the inventory's gpulab_plan
  gpulab.cluster.hardware_plan:
    plan: "{{ gpulab_plan }}"
  delegate_to: localhost
  run_once: true
  register: plan
"""

RETURN = r"""
status:
  description: Worst status among the checks (pass, warn, fail).
  returned: always
  type: str
checks:
  description: Check records C({check, status, value, threshold, unit, message, code}) - per node C(<node>.psu),
    C(<node>.pcie_lanes), C(<node>.nic_slot), C(<node>.numa); C(circuit.<name>), C(ups.load), C(ups.runtime),
    C(switch.ports).
  returned: always
  type: list
  elements: dict
sums:
  description: The figures behind the checks - the assumptions used, per node power, totals (W, BTU/h, GPUs),
    per circuit amps, UPS runtime, switch ports, bus bandwidth per link speed, Ceph usable TB, the cost, and the
    source of every GPU and NIC figure used.
  returned: always
  type: dict
"""

from ansible_collections.gpulab.cluster.plugins.module_utils import sizing
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import start
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import exit_with_records

ARGUMENT_SPEC = dict(plan=dict(type="dict", required=True))


def input_problem(p: dict) -> str | None:
    return "; ".join(sizing.problems(p["plan"])) or None


def main() -> None:
    module = start(ARGUMENT_SPEC, input_problem)
    records, sums = sizing.evaluate(module.params["plan"])
    exit_with_records(module, records, sums=sums)


if __name__ == "__main__":
    main()
