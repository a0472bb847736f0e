"""Action of gpulab.cluster.python_packages: ask the virtualenv's Python first (the module), and run
ansible.builtin.pip with the task's options only where it says pip has something to do; where pip changed
anything, ask again for the versions and site-packages."""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpulab.cluster.plugins.module_utils import pip_status

display = Display()
READ = ("installed", "site_packages")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        args.setdefault("virtualenv_command", pip_status.VIRTUALENV_COMMAND)
        status = self._execute_module(
            module_name="gpulab.cluster.python_packages", module_args=args, task_vars=task_vars
        )
        display.vv(f"python_packages: {status.get('why', status.get('msg'))}", host=task_vars.get("inventory_hostname"))
        if status.get("failed") or not status.get("needs_pip", True):
            result.update(status)
            return result
        result.update(self._execute_module(module_name="ansible.builtin.pip", module_args=args, task_vars=task_vars))
        if result.get("changed") and not result.get("failed") and not self._play_context.check_mode:
            status = self._execute_module(
                module_name="gpulab.cluster.python_packages", module_args=args, task_vars=task_vars
            )
        result.update({key: status.get(key) for key in READ}, needs_pip=True, missing=status.get("missing", []))
        return result
