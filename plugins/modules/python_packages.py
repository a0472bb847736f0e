#!/usr/bin/python
"""Install Python packages into a virtualenv with pip only where its Python says pip has something to do."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: python_packages
short_description: Pinned Python packages in a virtualenv, without a pip run when they are there
description:
  - The roles' pip task. Its action first asks the virtualenv's own Python (through this module) which
    distributions it holds, at which versions, and where its site-packages are. Only where a requirement is
    not met does it run C(ansible.builtin.pip) with the same options, which then does all the work, check
    mode included, and asks the Python again afterwards.
  - On a run that changes nothing this spares every pip task a pip run, which lists the whole environment
    (seconds on each node).
  - Judged here - C(name==version), a bare C(name) (any version), a wheel file's path. Anything else (a
    range, extras, a URL) goes to pip.
  - Run alone (without its action) the module only reports what the virtualenv holds.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  name:
    description: Requirements as pip takes them.
    type: list
    elements: str
    required: true
  virtualenv:
    description: The virtualenv; made with I(virtualenv_command) where pip runs and it does not exist.
    type: path
    required: true
  virtualenv_command:
    description: Passed to pip where it runs.
    type: str
    default: python3 -m venv
  extra_args:
    description: Passed to pip where it runs (an index URL, C(--no-build-isolation)).
    type: str
attributes:
  check_mode:
    description: Can run in check mode.
    support: full
    details: Where pip runs, pip's own check mode applies.
  diff_mode:
    description: Returns no diff.
    support: none
notes:
  - Where pip runs, the task's C(environment) applies to it (a proxy, build flags).
"""

EXAMPLES = r"""
- name: Install the pinned NCCL wheel
  gpulab.cluster.python_packages:
    name: [nvidia-nccl-cu12==2.21.5]
    virtualenv: /opt/gpulab/nccl
  register: nccl_wheel

- name: Point a stable path at the wheel's library
  gpulab.cluster.files:
    files: []
    links: [{path: /opt/gpulab/nccl/nccl, target: "{{ nccl_wheel.site_packages }}/nvidia/nccl"}]
  when: nccl_wheel.site_packages | length > 0
"""

RETURN = r"""
needs_pip:
  description: Whether pip has something to do (a requirement not met, or one only pip can judge).
  returned: always
  type: bool
missing:
  description: The requirements the virtualenv does not meet; empty where it cannot judge.
  returned: always
  type: list
  elements: str
  sample: [nvidia-nccl-cu12==2.21.5]
installed:
  description: Each distribution the virtualenv holds, with its version (as its metadata names it); after pip
    changed anything, as pip left them. Empty where there is no virtualenv.
  returned: always
  type: dict
  sample: {nvidia-nccl-cu12: 2.21.5, pip: "23.0.1"}
site_packages:
  description: The virtualenv's site-packages directory, or an empty string where there is no virtualenv.
  returned: always
  type: str
  sample: /opt/gpulab/nccl/lib/python3.11/site-packages
why:
  description: Why pip runs, in words, or why it does not.
  returned: always
  type: str
  sample: every requirement met
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import pip_status

ARGUMENT_SPEC = {
    "name": {"type": "list", "elements": "str", "required": True},
    "virtualenv": {"type": "path", "required": True},
    "virtualenv_command": {"type": "str", "default": pip_status.VIRTUALENV_COMMAND},
    "extra_args": {"type": "str"},
}


def read(module: AnsibleModule) -> dict:
    """{"site_packages", "versions"} from the virtualenv's Python; empty ones where there is no virtualenv."""
    python = os.path.join(module.params["virtualenv"], "bin", "python")
    if not os.path.exists(python):
        return {"site_packages": "", "versions": {}}
    rc, out, err = module.run_command([python, "-c", pip_status.READ_SCRIPT])
    if rc != 0:
        module.fail_json(msg=f"{python} could not list its packages (rc {rc}): {(err or out).strip()[-500:]}")
    try:
        return json.loads(out)
    except ValueError:
        module.fail_json(msg=f"{python} printed no package list: {out.strip()[-500:]}")


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    found = read(module)
    missing = pip_status.missing(module.params["name"], found["versions"])
    if missing is None:
        why = "requirements only pip can judge"
    elif missing:
        why = f"to install: {', '.join(missing)}"
    else:
        why = "every requirement met"
    module.exit_json(
        changed=False,
        needs_pip=missing is None or bool(missing),
        missing=missing or [],
        installed=found["versions"],
        site_packages=found["site_packages"],
        why=why,
    )


if __name__ == "__main__":
    main()
