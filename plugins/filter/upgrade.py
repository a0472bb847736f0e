"""Filters of the upgrade role: its settings and tags checked before any node is drained, the
pins the rolled roles declare (their tasks/pins.yml), and what Ceph says about stopping a node's daemons."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


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
        problems.append(
            f"upgrade.yml does not know the tag(s) {', '.join(unknown)}; it upgrades by: {', '.join(known)}"
        )
    if list(compute) and controller not in set(hosts):
        problems.append(
            f"the Slurm controller {controller!r} is not an inventory host (slurm_controller, default the first"
            " management node): the upgrade drains nodes through it"
        )
    return problems


def upgrade_pins(
    packages: Iterable[str], role: str, version: str, wanted: str, venv: str | None = None
) -> list[dict[str, Any]]:
    """A role's pins for the upgrade_plan module: each package (a "name=version" keeps its name) with the
    pattern its installed version must match ('' for any), the pin in words, and the virtualenv of a wheel."""
    return [
        {"role": role, "package": package.split("=", 1)[0], "version": version, "wanted": wanted, "venv": venv}
        for package in packages
    ]


# The daemons a storage node's reboot stops, each of which Ceph can be asked about (`ceph <kind> ok-to-stop`).
CEPH_STOPPABLE = ("osd", "mon", "mds")


def ceph_daemons_on(node_ls: Mapping[str, Any], host: str) -> dict[str, list[str]]:
    """`ceph node ls --format json` -> the daemons on host, by kind ({'osd': ['0', '1'], 'mon': ['st1']});
    kinds with none left out."""
    found = {kind: [str(name) for name in (node_ls.get(kind) or {}).get(host, [])] for kind in CEPH_STOPPABLE}
    return {kind: names for kind, names in found.items() if names}


def ceph_refusals(results: Iterable[Mapping[str, Any]]) -> list[str]:
    """The looped `ceph <kind> ok-to-stop <names>` results -> one line per kind Ceph refused to lose:
    "osd 0 1: <what ceph said>"."""
    refusals = []
    for result in results:
        if result.get("rc") == 0:
            continue
        said = (result.get("stderr") or result.get("stdout") or result.get("msg") or "no answer").strip()
        refusals.append(f"{result['cmd'][1]} {' '.join(result['cmd'][3:])}: {said.removeprefix('Error EBUSY: ')}")
    return refusals


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "upgrade_problems": upgrade_problems,
            "upgrade_pins": upgrade_pins,
            "ceph_daemons_on": ceph_daemons_on,
            "ceph_refusals": ceph_refusals,
        }
