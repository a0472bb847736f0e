"""GPU power limits as data: read what nvidia-smi reports and plan the `nvidia-smi -pl` calls that
make it match the inventory. Pure functions; the gpu_power_limit module runs nvidia-smi."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# nvidia-smi --query-gpu fields, in order: the enforced limit and the range the GPU allows.
FIELDS = ("index", "power.limit", "power.min_limit", "power.max_limit", "power.default_limit")
KEYS = ("index", "limit", "min", "max", "default")
MISSING = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]"}
# nvidia-smi reports limits to 0.01 W; a request within this of the current limit is met.
TOLERANCE_W = 0.5


class PowerParseError(ValueError):
    """nvidia-smi output that is not the asked-for CSV."""


def _watts(raw: str) -> float | None:
    text = raw.strip()
    if text.lower() in MISSING:
        return None
    try:
        return float(text.split()[0])
    except ValueError as exc:
        raise PowerParseError(f"not a power value: {raw!r}") from exc


def parse_power_csv(text: str) -> list[dict[str, Any]]:
    """`nvidia-smi --query-gpu=<FIELDS> --format=csv,noheader,nounits` -> [{index, limit, min, max, default}]."""
    gpus = []
    for line in text.strip().splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(KEYS) or not cells[0].isdigit():
            raise PowerParseError(f"expected {len(KEYS)} fields starting with the GPU index: {line[:120]!r}")
        gpus.append(
            {"index": int(cells[0]), **{key: _watts(cell) for key, cell in zip(KEYS[1:], cells[1:], strict=True)}}
        )
    return gpus


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
