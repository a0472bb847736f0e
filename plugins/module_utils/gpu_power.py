"""GPU power limits as data: plan the `nvidia-smi -pl` calls that make what nvidia-smi reports
(nvidia_smi.parse_power_csv) match the inventory. Pure functions; the gpu_power_limit module runs
nvidia-smi."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# nvidia-smi reports limits to 0.01 W; a request within this of the current limit is met.
TOLERANCE_W = 0.5


def plan(gpus: list[dict[str, Any]], wanted: Mapping[Any, Any], variable: str) -> tuple[list[dict], list[str]]:
    """The limits to set, [{index, from, to}], and the problems that forbid setting any.

    wanted: watts by GPU index, or `all` for every GPU of the node (an index wins over `all`).
    A GPU outside its allowed range, one that reports no settable limit, an index the node does
    not have and a value that is not a number are problems, named with `variable`."""
    by_index = {gpu["index"]: gpu for gpu in gpus}
    problems, targets = [], {}
    # `all` first, so that a GPU's own entry replaces it.
    for key, value in sorted(wanted.items(), key=lambda item: str(item[0]) != "all"):
        name = f"{variable}[{key}]"
        try:
            watts = float(value)
        except (TypeError, ValueError):
            problems.append(f"{name} must be watts (a number), got {value!r}")
            continue
        if str(key) == "all":
            targets.update(dict.fromkeys(by_index, (name, watts)))
        elif str(key).isdigit() and int(key) in by_index:
            targets[int(key)] = (name, watts)
        else:
            have = ", ".join(map(str, sorted(by_index))) or "none"
            problems.append(f"{name}: this node has no GPU {key} (its GPUs: {have})")
    changes = []
    for index, (name, watts) in sorted(targets.items()):
        gpu = by_index[index]
        low, high = gpu.get("min"), gpu.get("max")
        if low is None or high is None:
            problems.append(f"{name}: GPU {index} reports no power limit range: its limit cannot be set")
        elif not low <= watts <= high:
            problems.append(f"{name}: {watts:g} W is outside what GPU {index} allows ({low:g} to {high:g} W)")
        elif gpu.get("limit") is None or abs(gpu["limit"] - watts) > TOLERANCE_W:
            changes.append({"index": index, "from": gpu.get("limit"), "to": watts})
    return changes, problems
