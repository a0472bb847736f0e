"""Action of gpulab.cluster.files: render each `template` entry and read each `src` entry on the controller,
as the template and copy actions do, then write every file in one run of the module on the node."""

from __future__ import annotations

import os
from typing import Any

from ansible._internal._templating import _template_vars
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template

SOURCES = ("content", "template", "src")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def _render(self, name: str, task_vars: dict[str, Any], extra_vars: dict[str, Any]) -> str:
        """The template as the template action renders it: the task's variables (a shallow copy, where the
        template lookup copies them deeply, for each file), `ansible_managed` and the template_* variables,
        the entry's vars; includes found beside it and in the role's and play's search paths."""
        source = self._find_needle("templates", name)
        searchpath = []
        for path in [*task_vars.get("ansible_search_path", []), os.path.dirname(source)]:
            searchpath += [os.path.join(path, "templates"), path]
        variables = dict(task_vars)
        variables.update(
            _template_vars.generate_ansible_template_vars(
                path=name, fullpath=source, include_ansible_managed="ansible_managed" not in variables
            )
        )
        variables.update(extra_vars)
        templar = self._templar.copy_with_new_env(searchpath=searchpath, available_variables=variables)
        text = trust_as_template(self._loader.get_text_file_contents(source))
        return templar.template(text, escape_backslashes=False) or ""

    def _content(self, entry: dict[str, Any], task_vars: dict[str, Any]) -> str:
        given = [key for key in SOURCES if entry.get(key) is not None]
        if len(given) != 1:
            raise AnsibleActionFail(f"files: {entry.get('path')} needs exactly one of content, template or src")
        if "vars" in entry and given != ["template"]:
            raise AnsibleActionFail(f"files: {entry.get('path')}: vars go with template only")
        if given == ["content"]:
            return entry["content"]
        if given == ["template"]:
            return self._render(entry["template"], task_vars, entry.get("vars") or {})
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
