"""The planner's hardware list completed from the inventory (module_utils/sizing.py holds the rules)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.module_utils import sizing


def plan_with_inventory(plan: Any, groups: Mapping[str, list[str]], hostvars: Mapping[str, Any]) -> Any:
    """gpulab_plan with each node entry that names `hosts` completed from those hosts' variables; refuses,
    naming each setting, what the inventory cannot complete."""
    # Only the variables the planner reads: templating every variable of every host is slow, and one that does not
    # template would fail a plan that never uses it.
    hosts = {
        host: {name: hostvars[host].get(name) for name in sizing.INVENTORY_VARS}
        for members in groups.values()
        for host in members
        if host in hostvars
    }
    resolved, problems = sizing.with_inventory(plan, dict(groups), hosts, "gpulab_plan")
    if problems:
        raise AnsibleFilterError("; ".join(problems))
    return resolved


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"plan_with_inventory": plan_with_inventory}
