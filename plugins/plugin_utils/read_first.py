"""The shape shared by the read-first actions (gpulab.cluster.packages, gpulab.cluster.python_packages).

The collection's module of the same name reads what the node holds and says whether the real module (apt,
pip) has anything to do. Only then does the real module run, with the task's options; where it changed
something, the node is read again, so that the task returns what the real module left."""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()


class ReadFirstAction(ActionBase):
    """Subclasses name the reader module, the real module, the reader's key that says the real module is
    needed, and the read keys (with their defaults) a task returns after the real module ran."""

    TRANSFERS_FILES = False
    READER: str = ""
    WORKER: str = ""
    NEEDED: str = ""
    READ: dict[str, Any] = {}

    def module_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """The task's options as both modules get them."""
        return args

    def reread_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """The options of the second read, after the real module changed something."""
        return args

    def quick_read(self, args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any] | None:
        """The task's whole answer where a read without the reader module settles it, or None."""
        return None

    def settled(self, status: dict[str, Any]) -> bool:
        """Whether the first read is the task's whole answer."""
        return bool(status.get("failed")) or not status.get(self.NEEDED, True)

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self.module_args(dict(self._task.args))
        short = self.READER.rsplit(".", 1)[-1]
        status = self.quick_read(args, task_vars)
        if status is not None:
            display.vv(f"{short}: {status['why']} (read without Python)", host=task_vars.get("inventory_hostname"))
            result.update(status)
            return result
        status = self._execute_module(module_name=self.READER, module_args=args, task_vars=task_vars)
        display.vv(f"{short}: {status.get('why', status.get('msg'))}", host=task_vars.get("inventory_hostname"))
        if self.settled(status):
            result.update(status)
            return result
        result.update(self._execute_module(module_name=self.WORKER, module_args=args, task_vars=task_vars))
        if result.get("changed") and not result.get("failed") and not self._play_context.check_mode:
            status = self._execute_module(
                module_name=self.READER, module_args=self.reread_args(args), task_vars=task_vars
            )
        result.update({key: status.get(key, default) for key, default in self.READ.items()})
        result[self.NEEDED] = True
        return result
