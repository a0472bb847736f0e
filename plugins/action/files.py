"""Action of gpulab.cluster.files: render each `template` entry and read each `src` entry on the controller,
as the template and copy actions do, then write every file in one run of the module on the node."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

SOURCES = ("content", "template", "src")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def _content(self, entry: dict[str, Any], task_vars: dict[str, Any]) -> str:
        given = [key for key in SOURCES if entry.get(key) is not None]
        if len(given) != 1:
            raise AnsibleActionFail(f"files: {entry.get('path')} needs exactly one of content, template or src")
        if "vars" in entry and given != ["template"]:
            raise AnsibleActionFail(f"files: {entry.get('path')}: vars go with template only")
        if given == ["content"]:
            return entry["content"]
        if given == ["template"]:
            lookup = self._shared_loader_obj.lookup_loader.get(
                "ansible.builtin.template", loader=self._loader, templar=self._templar
            )
            return lookup.run([entry["template"]], variables=task_vars, template_vars=entry.get("vars") or {})[0]
        with open(self._find_needle("files", entry["src"]), encoding="utf-8") as handle:
            return handle.read()

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        args["files"] = [
            {
                **{k: v for k, v in entry.items() if k not in ("template", "src", "vars")},
                "content": self._content(entry, task_vars or {}),
            }
            for entry in args.get("files") or []
        ]
        result.update(self._execute_module(module_name="gpulab.cluster.files", module_args=args, task_vars=task_vars))
        return result
