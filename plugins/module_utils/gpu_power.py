"""GPU power limits as data: plan the `nvidia-smi -pl` calls that make what nvidia-smi reports
(nvidia_smi.parse_power_csv) match the inventory. Pure functions; the gpu_power_limit module runs
nvidia-smi."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# nvidia-smi reports limits to 0.01 W; a request within this of the current limit is met.
TOLERANCE_W = 0.5


def _order(key: Any) -> int:
    """`all` first, then indexes, then UUIDs: the more exact entry is applied last and wins."""
    return 0 if str(key) == "all" else 1 if str(key).isdigit() else 2


def resolve(gpus: list[dict[str, Any]], wanted: Mapping[Any, Any], variable: str) -> tuple[dict, list[str]]:
    """Each GPU's wanted limit, {index: (entry name, watts)}, and the entries that name no GPU or no number.

    wanted: watts by GPU index (as nvidia-smi numbers them now), by UUID (GPU-...), or `all` for every GPU
    of the node; a UUID wins over an index, an index over `all`."""
    by_index = {gpu["index"]: gpu for gpu in gpus}
    by_uuid = {gpu.get("uuid"): gpu["index"] for gpu in gpus if gpu.get("uuid")}
    problems, targets = [], {}
    for key, value in sorted(wanted.items(), key=lambda item: _order(item[0])):
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
        elif str(key) in by_uuid:
            targets[by_uuid[str(key)]] = (name, watts)
        else:
            have = ", ".join(f"{i} ({by_index[i].get('uuid') or 'no UUID'})" for i in sorted(by_index)) or "none"
            problems.append(f"{name}: this node has no GPU {key} (its GPUs: {have})")
    return targets, problems


def plan(gpus: list[dict[str, Any]], wanted: Mapping[Any, Any], variable: str) -> tuple[list[dict], list[str]]:
    """The limits to set, [{index, uuid, from, to}], and the problems that forbid setting any.

    A GPU outside its allowed range, one that reports no settable limit, a GPU the node does not
    have and a value that is not a number are problems, named with `variable`."""
    by_index = {gpu["index"]: gpu for gpu in gpus}
    targets, problems = resolve(gpus, wanted, variable)
    changes = []
    for index, (name, watts) in sorted(targets.items()):
        gpu = by_index[index]
        low, high = gpu.get("min"), gpu.get("max")
        if low is None or high is None:
            problems.append(f"{name}: GPU {index} reports no power limit range: its limit cannot be set")
        elif not low <= watts <= high:
            problems.append(f"{name}: {watts:g} W is outside what GPU {index} allows ({low:g} to {high:g} W)")
        elif gpu.get("limit") is None or abs(gpu["limit"] - watts) > TOLERANCE_W:
            changes.append({"index": index, "uuid": gpu.get("uuid"), "from": gpu.get("limit"), "to": watts})
    return changes, problems


def per_gpu(gpus: list[dict[str, Any]], wanted: Mapping[Any, Any], variable: str) -> list[dict[str, Any]]:
    """Every GPU's wanted limit by its UUID, [{index, uuid, watts}]: what the boot unit sets, whatever
    order the driver numbers the GPUs in at the next boot."""
    by_index = {gpu["index"]: gpu for gpu in gpus}
    targets, _problems = resolve(gpus, wanted, variable)
    return [
        {"index": index, "uuid": by_index[index].get("uuid"), "watts": watts}
        for index, (_name, watts) in sorted(targets.items())
    ]
