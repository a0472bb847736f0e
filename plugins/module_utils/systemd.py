"""Read `systemctl show` and decide what a set of services needs: pure functions for the files module.

A service here is enabled, and started unless told otherwise; it is restarted (run again, for a oneshot
unit) when a path its task changed matches one of its `restart_on` patterns.
"""

from __future__ import annotations

import fnmatch
from typing import Any

PROPERTIES = ("Id", "LoadState", "ActiveState", "UnitFileState", "NeedDaemonReload")
# The unit file states `systemctl is-enabled` answers 0 for: nothing to enable.
ENABLED = frozenset({"enabled", "enabled-runtime", "static", "alias", "indirect", "generated", "transient"})
RUNNING = frozenset({"active", "activating", "reloading"})
# Where a changed path is a unit (or a drop-in) that systemd must read again before it acts on it.
UNIT_DIRS = ("/etc/systemd/", "/usr/lib/systemd/", "/lib/systemd/", "/run/systemd/system/")


class SystemdParseError(ValueError):
    """Output that is not what `systemctl show -p ...` prints for the units asked."""


def parse_show(text: str, count: int) -> list[dict[str, str]]:
    """`systemctl show -p Id,LoadState,... A B C` -> one dict per unit asked, in the order asked."""
    blocks = [block for block in text.strip().split("\n\n") if block.strip()]
    units = []
    for block in blocks:
        unit = {}
        for line in block.splitlines():
            key, sep, value = line.partition("=")
            if not sep:
                raise SystemdParseError(f"not systemctl show output: {line!r}")
            unit[key] = value
        missing = [key for key in PROPERTIES if key not in unit]
        if missing:
            raise SystemdParseError(f"systemctl show left out {', '.join(missing)} in {block!r}")
        units.append(unit)
    if len(units) != count:
        raise SystemdParseError(f"systemctl show answered for {len(units)} units, {count} asked")
    return units


def needs_reload(changed_paths: list[str]) -> bool:
    """Whether a changed path is a unit file or drop-in that systemd has to read again."""
    return any(path.startswith(UNIT_DIRS) for path in changed_paths)


def plan(services: list[dict[str, Any]], units: list[dict[str, str]], changed_paths: list[str]) -> list[list[str]]:
    """Per service, in order, the actions it needs: 'enable', then 'start' or 'restart'.

    A unit that is not found or masked is an error the caller reports (unit_problems)."""
    actions = []
    for service, unit in zip(services, units, strict=True):
        todo = [] if unit["UnitFileState"] in ENABLED else ["enable"]
        patterns = service.get("restart_on") or []
        if any(fnmatch.fnmatch(path, pattern) for pattern in patterns for path in changed_paths):
            todo.append("restart")
        elif service.get("start", True) and unit["ActiveState"] not in RUNNING:
            todo.append("start")
        actions.append(todo)
    return actions


def unit_problems(services: list[dict[str, Any]], units: list[dict[str, str]], missing_ok: bool = False) -> list[str]:
    """Units systemd does not know (unless missing_ok) or will not start, named as the task gave them."""
    problems = []
    for service, unit in zip(services, units, strict=True):
        if unit["LoadState"] == "not-found" and not missing_ok:
            problems.append(f"{service['name']}: no such unit")
        elif unit["LoadState"] == "masked" or unit["UnitFileState"] == "masked":
            problems.append(f"{service['name']}: the unit is masked")
    return problems
