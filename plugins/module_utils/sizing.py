"""The planner: power, circuits, UPS, heat, PCIe lanes, NIC slots, switch ports, bandwidth, Ceph capacity and
cost of a cluster before it is bought, from a hardware list. Pure functions.

Every figure the planner assumes is an input (ASSUMPTIONS, overridable in the plan); GPU and NIC figures come
from GPUS and NICS, each entry naming its source. `problems` refuses a plan it cannot size, naming the
setting; `evaluate` gives check records and the sums behind them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils import cost
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import (
    Check,
    as_number,
    failed,
    passed,
    warned,
)
from ansible_collections.gpulab.cluster.plugins.module_utils.plan import expected_busbw


@dataclass(frozen=True)
class Gpu:
    tdp_w: float  # board power at its default limit
    pcie_gen: int
    memory_gb: int
    source: str


@dataclass(frozen=True)
class Nic:
    speed_gbps: float  # per port
    ports: int
    pcie_gen: int
    pcie_lanes: int
    source: str


# Board power and host interface as the vendors' product pages give them.
GPUS = {
    "rtx3090": Gpu(350, 4, 24, "NVIDIA GeForce RTX 3090 specifications: 350 W graphics card power, PCIe 4.0"),
    "rtx4090": Gpu(450, 4, 24, "NVIDIA GeForce RTX 4090 specifications: 450 W graphics card power, PCIe 4.0"),
    "rtx5090": Gpu(575, 5, 32, "NVIDIA GeForce RTX 5090 specifications: 575 W total graphics power, PCIe 5.0"),
    "rtx_a6000": Gpu(300, 4, 48, "NVIDIA RTX A6000 datasheet: 300 W max power, PCIe 4.0 x16"),
    "l40s": Gpu(350, 4, 48, "NVIDIA L40S datasheet: 350 W max power, PCIe 4.0 x16"),
    "a100_pcie": Gpu(300, 4, 80, "NVIDIA A100 datasheet (80 GB PCIe): 300 W max TDP, PCIe 4.0"),
    "h100_pcie": Gpu(350, 5, 80, "NVIDIA H100 datasheet (PCIe): 300-350 W max TDP, PCIe 5.0 x16"),
    "h200_nvl": Gpu(600, 5, 141, "NVIDIA H200 datasheet (NVL): up to 600 W max TDP, PCIe 5.0 x16"),
}
NICS = {
    "connectx5_100": Nic(100, 2, 3, 16, "NVIDIA ConnectX-5 EN product brief: 100GbE, PCIe 3.0 x16"),
    "connectx6dx_100": Nic(100, 2, 4, 16, "NVIDIA ConnectX-6 Dx product brief: 2 x 100GbE, PCIe 4.0 x16"),
    "connectx6_200": Nic(200, 1, 4, 16, "NVIDIA ConnectX-6 VPI product brief: 200 Gb/s, PCIe 4.0 x16"),
    "connectx7_400": Nic(400, 1, 5, 16, "NVIDIA ConnectX-7 product brief: 400 Gb/s, PCIe 5.0 x16"),
    "intel_e810_100": Nic(100, 2, 4, 16, "Intel Ethernet E810-CQDA2 product brief: 2 x 100GbE, PCIe 4.0 x16"),
    "x550_10": Nic(10, 2, 3, 4, "Intel Ethernet X550-T2 product brief: 2 x 10GBASE-T, PCIe 3.0 x4"),
}
# Usable Gb/s per PCIe lane after line encoding (8b/10b to gen 2, 128b/130b from gen 3).
PCIE_GBPS_PER_LANE = {1: 2.0, 2: 4.0, 3: 7.877, 4: 15.754, 5: 31.508}
# A link's transfer rate (sysfs current_link_speed, "16.0 GT/s PCIe") to its generation.
PCIE_GEN_BY_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5}
WATT_BTU_H = 3.412
# What the planner assumes; a plan overrides any of them under `assumptions`.
ASSUMPTIONS = {
    "circuit_continuous_share": 0.8,  # a continuous load at most 80 % of the breaker (the NEC rule; IEC sites similar)
    "psu_headroom_share": 0.8,  # a node's peak at most 80 % of its PSU: efficient, and room for spikes
    "gpu_typical_share": 0.8,  # a training GPU's mean draw as a share of its power limit
    "gpu_idle_share": 0.1,  # an idle GPU's draw as a share of its board power
    "cpu_typical_share": 0.5,
    "ups_efficiency": 0.9,  # inverter losses
    "ups_min_runtime_min": 5,  # time to drain and shut down (the ups role's shutdown)
    "nvme_lanes": 4,
    "gpu_lanes": 16,
    "switch_spare_share": 0.25,  # ports to keep free for growth
    "ceph_full_share": 0.85,  # Ceph's nearfull ratio: plan to stay below it
}
KNOWN = ("nodes", "circuits", "ups", "switch", "ceph", "cost", "assumptions")


def gpu_key(name: str) -> str | None:
    """The table's key for a GPU name as nvidia-smi and gpulab_gpu_model give it ("NVIDIA GeForce RTX 4090" ->
    rtx4090, "NVIDIA H100 PCIe" -> h100_pcie); None when the table has no such GPU."""
    words = re.sub(r"\b(nvidia|geforce|\d+\s*gb)\b", "", name.lower())
    squeezed = re.sub(r"[^a-z0-9]", "", words)
    return next((key for key in GPUS if key.replace("_", "") == squeezed), None)


def _same(values: dict[str, Any], what: str, where: str) -> tuple[Any, list[str]]:
    """The one value every host gives (None when none gives one), or a problem naming the hosts that differ."""
    given = {host: value for host, value in values.items() if value is not None}
    if len({repr(v) for v in given.values()}) > 1:
        listed = ", ".join(f"{host}: {value!r}" for host, value in sorted(given.items()))
        return None, [f"{where}: the hosts differ in {what} ({listed}); give them separate node entries"]
    return next(iter(given.values()), None), []


# The host variables with_inventory reads.
INVENTORY_VARS = ("gpulab_gpu_count", "gpulab_gpu_model", "nvidia_driver_power_limits")


def with_inventory(
    plan: Any, groups: dict[str, list[str]], hostvars: dict[str, Any], name: str = "plan"
) -> tuple[Any, list[str]]:
    """The plan with each node entry that names `hosts` (an inventory group or host) completed from the
    inventory: count from the hosts, gpu.count from gpulab_gpu_count, gpu.model from gpulab_gpu_model, and
    gpu.power_limit_w from nvidia_driver_power_limits.all, wherever the entry does not say; and the problems
    that keep it from it, each naming the setting."""
    if not isinstance(plan, dict) or not isinstance(plan.get("nodes"), dict):
        return plan, []
    nodes, out = {}, []
    for node, hw in plan["nodes"].items():
        if not isinstance(hw, dict) or "hosts" not in hw:
            nodes[node] = hw
            continue
        where = f"{name}.nodes.{node}"
        members = groups.get(hw["hosts"]) or ([hw["hosts"]] if hw["hosts"] in hostvars else [])
        if not members:
            out.append(f"{where}.hosts {hw['hosts']!r} is neither a group nor a host of the inventory")
            continue
        hw = {**hw, "count": hw.get("count", len(members))}
        if hw["count"] != len(members):
            out.append(f"{where}.count is {hw['count']!r} but {hw['hosts']} has {len(members)} hosts; leave it out")
        seen = {host: hostvars.get(host) or {} for host in members}
        count, differ = _same({h: v.get("gpulab_gpu_count") for h, v in seen.items()}, "gpulab_gpu_count", where)
        model, differ_model = _same({h: v.get("gpulab_gpu_model") for h, v in seen.items()}, "gpulab_gpu_model", where)
        limits = {h: (v.get("nvidia_driver_power_limits") or {}).get("all") for h, v in seen.items()}
        limit, differ_limit = _same(limits, "nvidia_driver_power_limits.all", where)
        out += differ + differ_model + differ_limit
        gpu = dict(hw.get("gpu") or {})
        if count is not None and "count" not in gpu:
            gpu["count"] = int(count)
        if model is not None and "model" not in gpu:
            gpu["model"] = gpu_key(str(model))
            if gpu["model"] is None:
                out.append(
                    f"{where}.gpu.model: gpulab_gpu_model {model!r} is not in the planner's table; "
                    f"set gpu.model to one of {', '.join(GPUS)}"
                )
        if limit is not None and "power_limit_w" not in gpu:
            gpu["power_limit_w"] = limit
        nodes[node] = {**hw, "gpu": gpu} if gpu else hw
    return {**plan, "nodes": nodes}, out


def problems(plan: Any, name: str = "plan") -> list[str]:
    """What keeps the planner from sizing the plan, each naming the setting; [] when it can."""
    if not isinstance(plan, dict) or not isinstance(plan.get("nodes"), dict) or not plan["nodes"]:
        return [f"{name}.nodes must map each node (or kind of node) to its hardware"]
    out = [f"{name}.{key} is not a planner setting; use {', '.join(KNOWN)}" for key in plan if key not in KNOWN]
    circuits = plan.get("circuits") or {}
    for node, hw in plan["nodes"].items():
        where = f"{name}.nodes.{node}"
        gpu = hw.get("gpu") or {}
        if gpu and gpu.get("model") not in GPUS:
            out.append(
                f"{where}.gpu.model {gpu.get('model')!r} is not in the planner's table; use one of {', '.join(GPUS)}"
            )
        nic = hw.get("nic") or {}
        if nic.get("model") is not None and nic["model"] not in NICS:
            out.append(
                f"{where}.nic.model {nic['model']!r} is not in the planner's table; use one of {', '.join(NICS)}"
            )
        if nic and nic.get("model") is None and (as_number(nic.get("speed_gbps")) or 0) <= 0:
            out.append(f"{where}.nic needs a model from the planner's table or speed_gbps above 0")
        if nic.get("slot_gen") is not None and nic["slot_gen"] not in PCIE_GBPS_PER_LANE:
            out.append(f"{where}.nic.slot_gen must be a PCIe generation 1-5, got {nic['slot_gen']!r}")
        if hw.get("circuit") is not None and hw["circuit"] not in circuits:
            out.append(f"{where}.circuit {hw['circuit']!r} is not in {name}.circuits")
        for key, value in (
            ("count", hw.get("count", 1)),
            ("gpu.count", gpu.get("count", 0)),
            ("nvme", hw.get("nvme", 0)),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if key == "count" else 0):
                out.append(
                    f"{where}.{key} must be a whole number of at least {1 if key == 'count' else 0}, got {value!r}"
                )
        for key, value in (
            ("base_w", hw.get("base_w", 0)),
            ("cpu.tdp_w", (hw.get("cpu") or {}).get("tdp_w", 0)),
            ("gpu.power_limit_w", gpu.get("power_limit_w", 1)),
            ("psu_w", hw.get("psu_w", 1)),
        ):
            if (
                (number := as_number(value)) is None
                or number < 0
                or (key in ("psu_w", "gpu.power_limit_w") and number == 0)
            ):
                out.append(f"{where}.{key} must be a number of watts above 0, got {value!r}")
    for circuit, spec in circuits.items():
        for key in ("volts", "breaker_amps"):
            if (number := as_number((spec or {}).get(key))) is None or number <= 0:
                out.append(f"{name}.circuits.{circuit}.{key} must be a number above 0, got {(spec or {}).get(key)!r}")
    ceph = plan.get("ceph") or {}
    if ceph and ((r := as_number(ceph.get("replication"))) is None or r < 1):
        out.append(f"{name}.ceph.replication must be at least 1, got {ceph.get('replication')!r}")
    for key, value in (plan.get("assumptions") or {}).items():
        if key not in ASSUMPTIONS:
            out.append(f"{name}.assumptions.{key} is not an assumption; use one of {', '.join(ASSUMPTIONS)}")
        elif (number := as_number(value)) is None or number < 0:
            out.append(f"{name}.assumptions.{key} must be a number of at least 0, got {value!r}")
    if plan.get("cost"):
        out += cost.problems({"base_watts": 0, "utilization": 0.5, **plan["cost"]}, f"{name}.cost")
    return out


def _node_power(hw: dict[str, Any], a: dict[str, float]) -> dict[str, Any]:
    gpu = hw.get("gpu") or {}
    count = gpu.get("count", 0) if gpu else 0
    board = GPUS[gpu["model"]].tdp_w if gpu else 0
    limit = float(gpu.get("power_limit_w", board)) if gpu else 0
    cpu = float((hw.get("cpu") or {}).get("tdp_w", 0))
    base = float(hw.get("base_w", 0))
    return {
        "gpus": count,
        "peak_w": round(base + cpu + count * limit, 1),
        "typical_w": round(base + cpu * a["cpu_typical_share"] + count * limit * a["gpu_typical_share"], 1),
        "idle_w": round(base + count * board * a["gpu_idle_share"], 1),
        "gpu_limit_w": limit,
    }


def _nic_link(nic: dict[str, Any]) -> tuple[float, int, int]:
    """(port speed in Gb/s, the slot's lanes, the PCIe generation the card runs at) of a node's NIC: what the
    plan gives, else the table's figures for its model; a card of unknown width is taken for x16."""
    spec = NICS.get(nic.get("model"))
    speed = float(nic.get("speed_gbps", spec.speed_gbps if spec else 0))
    lanes = nic.get("slot_lanes", spec.pcie_lanes if spec else 16)
    gen = min(nic.get("slot_gen", spec.pcie_gen if spec else 4), spec.pcie_gen if spec else 5)
    return speed, lanes, gen


def _lanes(node: str, hw: dict[str, Any], a: dict[str, float]) -> list[Check]:
    cpu_lanes = (hw.get("cpu") or {}).get("pcie_lanes")
    gpus = (hw.get("gpu") or {}).get("count", 0) if hw.get("gpu") else 0
    nic_lanes = _nic_link(hw["nic"])[1] if hw.get("nic") else 0
    used = int(gpus * a["gpu_lanes"] + nic_lanes + hw.get("nvme", 0) * a["nvme_lanes"])
    if cpu_lanes is None:
        return []
    if used > cpu_lanes:
        return [
            warned(
                f"{node}.pcie_lanes",
                f"{used} PCIe lanes wanted ({gpus} GPUs x {a['gpu_lanes']:g}, the NIC's {nic_lanes}, "
                f"{hw.get('nvme', 0)} NVMe x {a['nvme_lanes']:g}), the CPU has {cpu_lanes}: some run at fewer lanes "
                "or behind a PCIe switch; check the board's slot map",
                value=used,
                threshold=cpu_lanes,
                code="PLAN_PCIE_LANES",
            )
        ]
    return [
        passed(f"{node}.pcie_lanes", f"{used} of the CPU's {cpu_lanes} PCIe lanes", value=used, threshold=cpu_lanes)
    ]


def slot_gbps(lanes: int, gen: int) -> float:
    """What a PCIe link of `lanes` lanes at generation `gen` carries, in Gb/s."""
    return lanes * PCIE_GBPS_PER_LANE[gen]


def slot_shortfall(speed_gbps: float, lanes: int, gen: int) -> str | None:
    """Why a NIC with a `speed_gbps` port is held back by a gen `gen` x`lanes` link; None when it is not.
    The planner's rule, and preflight's on the link a node's NIC trained at."""
    slot = slot_gbps(lanes, gen)
    if slot >= speed_gbps:
        return None
    return (
        f"a PCIe gen {gen} x{lanes} slot carries {slot:.0f} Gb/s, short of the NIC's {speed_gbps:g} Gb/s port: "
        f"put it in an x16 slot (or gen {gen + 1} x{lanes})"
    )


def numa_apart(gpu_nodes: list[int], nic_node: int) -> str | None:
    """Why GPUs on other NUMA nodes than their NIC are slower across nodes; None when all share its node."""
    apart = sorted({n for n in gpu_nodes if n != nic_node})
    if not apart:
        return None
    return (
        f"GPUs on NUMA node(s) {apart}, the NIC on {nic_node}: their traffic crosses the CPU link; "
        "one NIC per NUMA node, or set NCCL to the near one"
    )


def _nic(node: str, hw: dict[str, Any]) -> list[Check]:
    nic = hw.get("nic") or {}
    if not nic:
        return []
    speed, lanes, gen = _nic_link(nic)
    slot = slot_gbps(lanes, gen)
    records = []
    short = slot_shortfall(speed, lanes, gen)
    if short:
        records.append(
            warned(
                f"{node}.nic_slot", short, value=round(slot, 1), threshold=speed, unit="Gbit/s", code="PLAN_NIC_SLOT"
            )
        )
    else:
        records.append(
            passed(
                f"{node}.nic_slot", f"PCIe gen {gen} x{lanes}: {slot:.0f} Gb/s for {speed:g} Gb/s", value=round(slot, 1)
            )
        )
    numa = hw.get("numa") or {}
    if "nic" in numa and numa.get("gpus"):
        apart = numa_apart(numa["gpus"], numa["nic"])
        if apart:
            records.append(warned(f"{node}.numa", apart, code="PLAN_NUMA"))
        else:
            records.append(passed(f"{node}.numa", f"the GPUs and the NIC share NUMA node {numa['nic']}"))
    return records


def _psu(node: str, hw: dict[str, Any], power: dict[str, Any], a: dict[str, float]) -> list[Check]:
    if "psu_w" not in hw:
        return []
    psu = float(hw["psu_w"])
    peak = power["peak_w"]
    message = f"peak {peak:g} W on a {psu:g} W PSU ({peak / psu:.0%})"
    if peak > psu:
        return [
            failed(
                f"{node}.psu", message + ": more than it can give", value=peak, threshold=psu, unit="W", code="PLAN_PSU"
            )
        ]
    if peak > psu * a["psu_headroom_share"]:
        return [
            warned(
                f"{node}.psu",
                message + f": above {a['psu_headroom_share']:.0%}, no room for GPU power spikes",
                value=peak,
                threshold=psu * a["psu_headroom_share"],
                unit="W",
                code="PLAN_PSU_HEADROOM",
            )
        ]
    return [passed(f"{node}.psu", message, value=peak, threshold=psu * a["psu_headroom_share"], unit="W")]


def _circuits(plan: dict[str, Any], powers: dict[str, dict[str, Any]], a: dict[str, float]) -> tuple[list[Check], dict]:
    records, sums = [], {}
    for circuit, spec in (plan.get("circuits") or {}).items():
        volts, breaker = float(spec["volts"]), float(spec["breaker_amps"])
        on = [n for n, hw in plan["nodes"].items() if hw.get("circuit") == circuit]
        watts = sum(powers[n]["peak_w"] * plan["nodes"][n].get("count", 1) for n in on) + float(spec.get("other_w", 0))
        amps, limit = watts / volts, breaker * a["circuit_continuous_share"]
        sums[circuit] = {"nodes": on, "peak_w": round(watts, 1), "amps": round(amps, 2), "limit_amps": round(limit, 2)}
        what = f"{watts:g} W at {volts:g} V draws {amps:.1f} A on a {breaker:g} A breaker"
        if amps > limit:
            records.append(
                failed(
                    f"circuit.{circuit}",
                    f"{what}, above the {limit:g} A it carries continuously ({a['circuit_continuous_share']:.0%}): "
                    "split the nodes over more circuits or lower the GPUs' power limits"
                    + (f", or use a {volts * 2:g} V circuit" if volts < 200 else ""),
                    value=round(amps, 2),
                    threshold=limit,
                    unit="A",
                    code="PLAN_CIRCUIT",
                )
            )
        else:
            records.append(
                passed(
                    f"circuit.{circuit}",
                    f"{what} (at most {limit:g} A)",
                    value=round(amps, 2),
                    threshold=limit,
                    unit="A",
                )
            )
    return records, sums


def _ups(
    plan: dict[str, Any], total_peak: float, total_typical: float, a: dict[str, float]
) -> tuple[list[Check], dict]:
    ups = plan.get("ups") or {}
    if not ups:
        return [], {}
    capacity = float(ups["capacity_wh"])
    runtime = capacity * a["ups_efficiency"] / total_typical * 60 if total_typical else None
    summary = {"runtime_min": round(runtime, 1) if runtime else None, "load_w": total_typical}
    records = []
    if "max_w" in ups and total_peak > float(ups["max_w"]):
        records.append(
            failed(
                "ups.load",
                f"the cluster's peak {total_peak:g} W is above the UPS's {float(ups['max_w']):g} W: it would trip",
                value=total_peak,
                threshold=float(ups["max_w"]),
                unit="W",
                code="PLAN_UPS_LOAD",
            )
        )
    least = float(ups.get("min_runtime_min", a["ups_min_runtime_min"]))
    if runtime is not None and runtime < least:
        records.append(
            warned(
                "ups.runtime",
                f"{runtime:.1f} min at the typical {total_typical:g} W, under the {least:g} min a drain and "
                "shutdown take",
                value=round(runtime, 1),
                threshold=least,
                unit="min",
                code="PLAN_UPS_RUNTIME",
            )
        )
    elif runtime is not None:
        records.append(
            passed(
                "ups.runtime",
                f"{runtime:.1f} min at the typical {total_typical:g} W",
                value=round(runtime, 1),
                threshold=least,
                unit="min",
            )
        )
    return records, summary


def _switch(plan: dict[str, Any], a: dict[str, float]) -> tuple[list[Check], dict]:
    switch = plan.get("switch") or {}
    if not switch:
        return [], {}
    needed = sum(
        hw.get("count", 1) * (hw.get("nic") or {}).get("links", 1) for hw in plan["nodes"].values() if hw.get("nic")
    ) + int(switch.get("uplinks", 0))
    ports = int(switch["ports"]) * int(switch.get("breakout", 1))
    spare = ports - needed
    summary = {"ports": ports, "needed": needed, "spare": spare}
    if spare < 0:
        return [
            failed(
                "switch.ports",
                f"{needed} links wanted (nodes' NIC links and uplinks), the switch has {ports} ports"
                + (f" ({switch['ports']} x {switch['breakout']} breakout)" if switch.get("breakout", 1) > 1 else ""),
                value=needed,
                threshold=ports,
                code="PLAN_SWITCH_PORTS",
            )
        ], summary
    if spare < ports * a["switch_spare_share"]:
        return [
            warned(
                "switch.ports",
                f"{needed} of {ports} ports used: {spare} left, less than {a['switch_spare_share']:.0%} to grow into",
                value=needed,
                threshold=ports,
                code="PLAN_SWITCH_GROWTH",
            )
        ], summary
    return [
        passed("switch.ports", f"{needed} of {ports} ports used, {spare} left to grow", value=needed, threshold=ports)
    ], summary


def evaluate(plan: dict[str, Any]) -> tuple[list[Check], dict[str, Any]]:
    """(check records, the sums): plan as `problems` accepts it."""
    a = {**ASSUMPTIONS, **{k: float(v) for k, v in (plan.get("assumptions") or {}).items()}}
    nodes = plan["nodes"]
    powers = {node: _node_power(hw, a) for node, hw in nodes.items()}
    records: list[Check] = []
    for node, hw in nodes.items():
        records += _psu(node, hw, powers[node], a) + _lanes(node, hw, a) + _nic(node, hw)
    circuit_records, circuits = _circuits(plan, powers, a)
    total = {
        key: round(sum(powers[n][key] * nodes[n].get("count", 1) for n in nodes), 1)
        for key in ("peak_w", "typical_w", "idle_w")
    }
    gpus = sum(powers[n]["gpus"] * nodes[n].get("count", 1) for n in nodes)
    ups_records, ups = _ups(plan, total["peak_w"], total["typical_w"], a)
    switch_records, switch = _switch(plan, a)
    records += circuit_records + ups_records + switch_records
    speeds = {_nic_link(hw["nic"])[0] for hw in nodes.values() if hw.get("nic")}
    ceph = plan.get("ceph") or {}
    sums = {
        "assumptions": a,
        "nodes": powers,
        "total": {**total, "gpus": gpus, "heat_btu_h": round(total["peak_w"] * WATT_BTU_H)},
        "circuits": circuits,
        "ups": ups,
        "switch": switch,
        "busbw_gbs": {f"{speed:g}": round(expected_busbw(speed), 2) for speed in sorted(speeds)},
        "ceph_usable_tb": round(float(ceph["raw_tb"]) / float(ceph["replication"]) * a["ceph_full_share"], 1)
        if ceph
        else None,
        "cost": _cost(plan.get("cost"), total, gpus, a),
        "sources": {
            **{m: GPUS[m].source for m in sorted({hw["gpu"]["model"] for hw in nodes.values() if hw.get("gpu")})},
            **{
                m: NICS[m].source
                for m in sorted({hw["nic"]["model"] for hw in nodes.values() if (hw.get("nic") or {}).get("model")})
            },
        },
    }
    return records, sums


def _cost(
    settings: dict[str, Any] | None, total: dict[str, float], gpus: int, a: dict[str, float]
) -> dict[str, Any] | None:
    """The report's 3-year comparison (module_utils/cost.py) on the planned draw, with the break-even month."""
    if not settings:
        return None
    util = float(settings.get("utilization", 0.5))
    average = total["idle_w"] + util * (total["typical_w"] - total["idle_w"])
    sums = cost.totals(average, gpus, {"years": 3, "hardware_cost": 0, **settings, "utilization": util})
    monthly_saving = (sums["cloud"] - sums["energy_per_year"] * float(settings.get("years", 3))) / (
        12 * float(settings.get("years", 3))
    )
    hardware = float(settings.get("hardware_cost", 0))
    sums["break_even_months"] = round(hardware / monthly_saving, 1) if monthly_saving > 0 else None
    return sums
