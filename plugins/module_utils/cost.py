"""What the lab costs to run, beside renting the same GPUs in a cloud: the handbook's 3-year sum.

Pure functions. Power per node comes from the validation records: each GPU's draw when validated
and its power limit (gpu_health's `gpuN.power` checks: value = draw, threshold = limit, in W),
plus a base load per node that the operator gives (CPUs, disks, fans, PSU losses). A GPU under
training runs at its limit, so a node's average is
    base + utilization * limit + (1 - utilization) * draw when validated.
A node whose GPU power is unknown (a GPU without a reading, GPUs declared and not found, a check
that errored, a node not reached) is listed as not measured and left out of the sums, which then
say so: an estimate never hides what it lacks.
"""

from __future__ import annotations

import re
from typing import Any

HOURS_PER_YEAR = 24 * 365
# gpu_health's per-GPU records are named gpuN.<check>. These codes leave a node's GPU power
# unknown: declared GPUs or driver not found, or the check itself errored (the report's record).
GPU_RECORD = re.compile(r"^(gpu\d+)\.")
UNKNOWN_POWER = ("GPU_MISSING", "DRIVER_MISSING", "CHECK_ERROR")
REQUIRED = ("price_per_kwh", "base_watts", "utilization", "cloud_gpu_hour")
# The settings (validation_cost), each with what it means; all are shown beside the result.
SETTINGS = {
    "price_per_kwh": "electricity price per kWh",
    "base_watts": "base load per node (everything but the GPUs), W",
    "utilization": "share of the time the GPUs train (0-1)",
    "years": "years compared",
    "hardware_cost": "hardware cost of the cluster",
    "cloud_gpu_hour": "cloud price of one GPU-hour of the same class",
    "currency": "currency of the prices",
}


def node_power(gpu_checks: list[dict[str, Any]] | None) -> dict[str, Any]:
    """One node's GPU power from its gpu_health records: {gpus, draw_w, limit_w, measured}.

    None: nothing is known of the node (not reached, its check never ran): not measured. Not
    measured either: a GPU found without a power reading, or a record with an UNKNOWN_POWER code.
    A node with no GPU found and none declared draws no GPU power: its base load is measured enough.
    """
    if gpu_checks is None:
        return {"gpus": 0, "draw_w": 0, "limit_w": 0, "measured": False}
    readings = [
        c
        for c in gpu_checks
        if str(c.get("check", "")).endswith(".power")
        and c.get("unit") == "W"
        and isinstance(c.get("value"), (int, float))
        and isinstance(c.get("threshold"), (int, float))
    ]
    found = {m.group(1) for c in gpu_checks if (m := GPU_RECORD.match(str(c.get("check", ""))))}
    unknown = any(c.get("code") in UNKNOWN_POWER for c in gpu_checks)
    return {
        "gpus": len(readings),
        "draw_w": sum(c["value"] for c in readings),
        "limit_w": sum(c["threshold"] for c in readings),
        "measured": len(readings) == len(found) and not unknown,
    }


def _average_w(power: dict[str, Any], base_w: float, utilization: float) -> float:
    return base_w + utilization * power["limit_w"] + (1 - utilization) * power["draw_w"]


def estimate(nodes: dict[str, list[dict[str, Any]] | None], settings: dict[str, Any]) -> dict[str, Any]:
    """nodes: host -> its gpu_health records ([] for a node without GPU checks, None for one not
    known); settings: SETTINGS, and `measured_utilization` (0-1) where Prometheus measured it, which
    then replaces the operator's guess.
    Returns {settings, utilization: {value, measured}, nodes: {host: power + average_w}, not_measured, totals}."""
    measured = settings.get("measured_utilization")
    util = float(settings["utilization"] if measured is None else measured)
    per_node = {}
    for host in sorted(nodes):
        power = node_power(nodes[host])
        power["average_w"] = (
            round(_average_w(power, float(settings["base_watts"]), util), 1) if power["measured"] else None
        )
        per_node[host] = power
    counted = [p for p in per_node.values() if p["measured"]]
    return {
        "settings": {key: settings[key] for key in SETTINGS},
        "utilization": {"value": round(util, 3), "measured": measured is not None},
        "nodes": per_node,
        "not_measured": sorted(h for h, p in per_node.items() if not p["measured"]),
        "totals": totals(
            sum(p["average_w"] for p in counted), sum(p["gpus"] for p in counted), {**settings, "utilization": util}
        ),
    }


def totals(average_w: float, gpus: int, settings: dict[str, Any]) -> dict[str, Any]:
    """The 3-year sums for a cluster drawing average_w with gpus GPUs: energy, the home lab (hardware and
    energy) against the same GPU-hours in a cloud. The report's cost section and the planner share them."""
    util, years = float(settings["utilization"]), float(settings["years"])
    kwh_year = average_w * HOURS_PER_YEAR / 1000
    energy_year = kwh_year * float(settings["price_per_kwh"])
    gpu_hours = gpus * HOURS_PER_YEAR * util * years
    homelab = float(settings["hardware_cost"]) + energy_year * years
    cloud = gpu_hours * float(settings["cloud_gpu_hour"])
    return {
        "average_w": round(average_w, 1),
        "kwh_per_year": round(kwh_year, 1),
        "energy_per_year": round(energy_year, 2),
        "gpus": gpus,
        "gpu_hours": round(gpu_hours),
        "homelab": round(homelab, 2),
        "cloud": round(cloud, 2),
        # What one used GPU-hour costs at home over the period (None without GPUs to use).
        "homelab_per_gpu_hour": round(homelab / gpu_hours, 2) if gpu_hours else None,
    }


def problems(settings: dict[str, Any], name: str = "validation_cost") -> list[str]:
    """What is wrong with the settings, each message naming `name.key`; [] when they can be used."""
    missing = [key for key in REQUIRED if settings.get(key) is None]
    if missing:
        return [f"{name} needs {', '.join(f'{name}.{key}' for key in missing)} (or leave {name} empty)"]
    out = []
    for key in ("price_per_kwh", "base_watts", "hardware_cost", "cloud_gpu_hour"):
        if float(settings.get(key) or 0) < 0:
            out.append(f"{name}.{key} must be 0 or more, got {settings[key]}")
    if not 0 <= float(settings.get("utilization", 0)) <= 1:
        out.append(f"{name}.utilization is a share of the time, 0 to 1, got {settings['utilization']}")
    if settings.get("measured_utilization") is not None and not 0 <= float(settings["measured_utilization"]) <= 1:
        out.append(f"measured_utilization is a share of the time, 0 to 1, got {settings['measured_utilization']}")
    if float(settings.get("years", 3)) <= 0:
        out.append(f"{name}.years must be more than 0, got {settings['years']}")
    return out
