"""Action of gpulab.cluster.packages: ask dpkg first, and run ansible.builtin.apt with the task's options only
where it says apt has something to do (in check mode the module simulates the install itself where it can).
Where apt changed anything, dpkg is asked again for the versions and holds.

The first read is a shell command (dpkg-query and stat), judged here: starting Python and the module on the
node costs about 30 times as much, and on a run that changes nothing that read is the whole task. Only
where it finds something to do, or cannot judge, does the module read again and decide as before."""

from __future__ import annotations

from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpulab.cluster.plugins.module_utils import apt_status
from ansible_collections.gpulab.cluster.plugins.plugin_utils.read_first import ReadFirstAction


class ActionModule(ReadFirstAction):
    READER = "gpulab.cluster.packages"
    WORKER = "ansible.builtin.apt"
    NEEDED = "needs_apt"
    READ = {"installed": {}, "held": []}

    def module_args(self, args: dict[str, Any]) -> dict[str, Any]:
        if boolean(args.get("update_cache", False), strict=False):
            # The module's default, given to apt as well (apt's own, 0, would update the lists every time).
            # Only with update_cache: apt updates stale lists whenever cache_valid_time is set.
            args.setdefault("cache_valid_time", apt_status.CACHE_VALID_TIME)
        return args

    def reread_args(self, args: dict[str, Any]) -> dict[str, Any]:
        return dict(args, update_cache=False)

    def settled(self, status: dict[str, Any]) -> bool:
        # In check mode the module simulated the install itself.
        return super().settled(status) or bool(status.get("simulated"))

    def quick_read(self, args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any] | None:
        checked = ArgumentSpecValidator(apt_status.ARGUMENT_SPEC).validate(args)
        specs = apt_status.parse_specs(checked.validated_parameters.get("name") or [])
        if checked.error_messages or not specs:
            return None  # the module says what is wrong, or leaves it to apt
        names = [name for name, _version in specs]
        reply = self._low_level_execute_command(apt_status.read_command(names))
        read = apt_status.parse_read(reply.get("stdout", "")) if reply.get("rc") == 0 else None
        if read is None:
            return None
        status = apt_status.verdict(checked.validated_parameters, self._task.check_mode, specs, *read)
        if status["needs_apt"]:
            return None
        return dict(status, changed=False, simulated=False)
