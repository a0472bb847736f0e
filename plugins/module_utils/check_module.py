"""The start every check module shares: an AnsibleModule with check mode and the `fail_on` option, and its
input refused in one message, naming the setting, before anything runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import fail_on_option


def start(
    argument_spec: dict[str, Any], input_problem: Callable[[dict[str, Any]], str | None], **kwargs: Any
) -> AnsibleModule:
    """The module of argument_spec (plus fail_on); it fails at once where input_problem(params) names a problem."""
    module = AnsibleModule(
        argument_spec={**argument_spec, "fail_on": fail_on_option()}, supports_check_mode=True, **kwargs
    )
    problem = input_problem(module.params)
    if problem:
        module.fail_json(msg=problem)
    return module
