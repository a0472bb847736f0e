"""Filters of the upgrade role: its settings and tags checked before any node is drained."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Roles whose pins upgrade.yml does not roll yet, and what to do meanwhile.
NOT_YET = ("nvidia_driver", "cuda", "nccl", "container_runtime")


def _at_least_one(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    try:
        return int(str(value)) >= 1
    except ValueError:
        return False


def upgrade_problems(
    settings: Mapping[str, Any],
    run_tags: Iterable[str],
    known_tags: Iterable[str],
    controller: str,
    hosts: Iterable[str],
    compute: Iterable[str] = (),
) -> list[str]:
    """settings: upgrade_* name -> value; run_tags: ansible_run_tags; hosts: the inventory's hosts;
    compute: the compute nodes this run upgrades (they need the Slurm controller)."""
    problems = [
        f"{name} must be a whole number of at least 1, got {value!r}"
        for name, value in settings.items()
        if not _at_least_one(value)
    ]
    known = list(known_tags)
    unknown = sorted(set(run_tags) - set(known) - {"all", "always"})
    if unknown:
        message = f"upgrade.yml does not know the tag(s) {', '.join(unknown)}; it upgrades by: {', '.join(known)}"
        if set(unknown) & set(NOT_YET):
            message += (
                " (a driver, CUDA, NCCL or container runtime pin is not rolled by upgrade.yml yet: drain the node,"
                " run site.yml --tags <role> --limit <node>, and resume it)"
            )
        problems.append(message)
    if list(compute) and controller not in set(hosts):
        problems.append(
            f"the Slurm controller {controller!r} is not an inventory host (slurm_controller, default the first"
            " management node): the upgrade drains nodes through it"
        )
    return problems


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"upgrade_problems": upgrade_problems}
