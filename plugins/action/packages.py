"""Action of gpulab.cluster.packages: ask dpkg first (the module), and run ansible.builtin.apt with the
task's options only where it says apt has something to do (in check mode the module simulates the
install itself where it can). Where apt changed anything, dpkg is asked again for the versions and holds."""

from __future__ import annotations

from typing import Any

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
