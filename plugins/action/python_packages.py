"""Action of gpulab.cluster.python_packages: ask the virtualenv's Python first (the module), and run
ansible.builtin.pip with the task's options only where it says pip has something to do; where pip changed
anything, ask again for the versions and site-packages."""

from __future__ import annotations

from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils import pip_status
from ansible_collections.gpulab.cluster.plugins.plugin_utils.read_first import ReadFirstAction


class ActionModule(ReadFirstAction):
    READER = "gpulab.cluster.python_packages"
    WORKER = "ansible.builtin.pip"
    NEEDED = "needs_pip"
    READ = {"installed": {}, "site_packages": "", "missing": []}

    def module_args(self, args: dict[str, Any]) -> dict[str, Any]:
        args.setdefault("virtualenv_command", pip_status.VIRTUALENV_COMMAND)
        return args
