"""Action of gpulab.cluster.files: render each `template` entry and read each `src` entry on the controller,
as the template and copy actions do, then write every file in one run of the module on the node.

First it asks the node with one shell command whether anything differs (file_status): on a run that changes
nothing, that read is the task's whole answer, and neither Python nor the contents go to the node."""

from __future__ import annotations

import os
from typing import Any

from ansible._internal._templating import _template_vars
from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template
from ansible.utils.display import Display

from ansible_collections.gpulab.cluster.plugins.module_utils import file_status

display = Display()

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

    def _settled(self, args: dict[str, Any], task_vars: dict[str, Any]) -> bool:
        """Whether the shell read shows every path and service as the task wants them (the module then has
        nothing to do). Options the module would refuse, or the read cannot judge, leave it to the module."""
        checked = ArgumentSpecValidator(file_status.ARGUMENT_SPEC).validate(args)
        if checked.error_messages or not file_status.readable(checked.validated_parameters):
            return False
        params = checked.validated_parameters
        reply = self._low_level_execute_command(file_status.read_command(params))
        why = file_status.settled(params, reply.get("stdout", ""), self._task.check_mode)
        host = task_vars.get("inventory_hostname")
        display.vv(f"files: {why or 'every path and service as asked'} (read without Python)", host=host)
        return why is None

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
        if self._settled(args, task_vars or {}):
            result.update(changed=False, changed_paths=[], changed_services=[], diff=[])
            return result
        result.update(self._execute_module(module_name="gpulab.cluster.files", module_args=args, task_vars=task_vars))
        return result
