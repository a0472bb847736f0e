"""Action of gpulab.cluster.packages: ask dpkg first (the module), and run ansible.builtin.apt with the
task's options only where it says apt has something to do (in check mode the module simulates the
install itself where it can). Where apt changed anything, dpkg is asked again for the versions and holds."""

from __future__ import annotations

from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpulab.cluster.plugins.module_utils import apt_status

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        if boolean(args.get("update_cache", False), strict=False):
            # The module's default, given to apt as well (apt's own, 0, would update the lists every time).
            # Only with update_cache: apt updates stale lists whenever cache_valid_time is set.
            args.setdefault("cache_valid_time", apt_status.CACHE_VALID_TIME)
        status = self._execute_module(module_name="gpulab.cluster.packages", module_args=args, task_vars=task_vars)
        display.vv(f"packages: {status.get('why', status.get('msg'))}", host=task_vars.get("inventory_hostname"))
        if status.get("failed") or status.get("simulated") or not status.get("needs_apt", True):
            result.update(status)
            return result
        result.update(self._execute_module(module_name="ansible.builtin.apt", module_args=args, task_vars=task_vars))
        if result.get("changed") and not result.get("failed") and not self._play_context.check_mode:
            status = self._execute_module(
                module_name="gpulab.cluster.packages", module_args=dict(args, update_cache=False), task_vars=task_vars
            )
        result.update(installed=status.get("installed", {}), held=status.get("held", []))
        return result
