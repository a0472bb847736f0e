#!/usr/bin/python
"""Install packages with apt only where dpkg says apt has something to do."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: packages
short_description: Packages present through apt, without opening apt's cache when nothing is to do
description:
  - The roles' package task. Its action first asks dpkg (C(dpkg-query), through this module) whether every
    package in I(name) is installed, at its pin where the name carries one (C(name=version), C(*) as in
    the apt module), and whether apt would update its lists (I(update_cache) with lists older than
    I(cache_valid_time)). Only where something is to do does it run C(ansible.builtin.apt) with the same
    options, which then does all the work, check mode and diff included.
  - On a run that changes nothing this spares every package task apt's cache, which takes seconds to open
    on each node (tens of seconds under emulation).
  - The action asks dpkg first with one shell command (C(dpkg-query) and C(stat) of apt's lists, no Python on
    the node) and judges the answer on the controller. Where everything is installed and the lists are current,
    that is the task's whole answer. Otherwise, or where the answer is not what it expects, this module reads
    again and decides, as it would alone.
  - In check mode the module does apt's part itself where it can. It runs C(apt-get --simulate install) for
    the missing packages, which resolves their dependencies and fails on a version the sources lack as apt's
    check mode does, and reports what would be installed, without opening apt's cache in Python. Apt's lists
    are not updated in check mode, so they never make it run. A pin with C(*) still goes to apt.
  - Names the fast path cannot judge (a path, C(>=), C(:arch)) and I(state) other than C(present) go to
    apt straight away.
  - Run alone (without its action) the module only reports what dpkg says.
  - It returns the asked packages' installed versions and holds (I(installed), I(held)), read again after apt
    installed anything, so that a role need not ask dpkg once more.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  name:
    description: Package names, each optionally C(=VERSION).
    type: list
    elements: str
    required: true
  state:
    description: C(present); C(latest) and C(absent) always go to apt.
    type: str
    default: present
    choices: [present, latest, absent]
  update_cache:
    description: Update apt's lists first where they are older than I(cache_valid_time) (always without it).
    type: bool
    default: false
  cache_valid_time:
    description:
      - Seconds apt's lists stay valid where I(update_cache) is set; 0 means update every time. Unlike the apt
        module's, the default is an hour, which the action hands to apt too; no task needs to say it.
    type: int
    default: 3600
  install_recommends:
    description: Passed to apt where it installs.
    type: bool
  allow_downgrade:
    description: Passed to apt where it installs.
    type: bool
    default: false
  allow_change_held_packages:
    description: Passed to apt where it installs.
    type: bool
    default: false
  policy_rc_d:
    description: Passed to apt where it installs.
    type: int
requirements: [dpkg-query, python3-apt (for apt, where it runs)]
notes:
  - Supports check mode and diff; where apt runs, apt's own check mode and diff apply.
"""

EXAMPLES = r"""
- name: Install Slurm packages
  gpulab.cluster.packages:
    name: [slurmd, slurm-client]
    state: present
    update_cache: true
  register: slurm_install
"""

RETURN = r"""
needs_apt:
  description: Whether apt has something to do (a package missing or at another version, lists to update).
  returned: always
  type: bool
missing:
  description: The names (with their pins) dpkg has not installed as asked; empty where it cannot judge.
  returned: always
  type: list
  elements: str
  sample: [nut-client, "libnccl2=2.21.5-1+cuda12.4"]
installed:
  description:
    - Each asked package dpkg has fully installed, with its version; after apt changed anything, as it left them.
    - Empty where the names are not plain package names (a path, C(>=), C(:arch)).
  returned: always
  type: dict
  sample: {nvidia-driver: 535.247.01-1~deb12u1, jq: 1.6-2.1+deb12u1}
held:
  description: The asked packages on hold (C(apt-mark hold)), as I(installed) is read.
  returned: always
  type: list
  elements: str
  sample: [nvidia-driver]
lists_age:
  description: Seconds since apt's lists were last updated, or null where they never were.
  returned: always
  type: float
simulated:
  description: Check mode only. Whether the module simulated the install itself (apt is then not run).
  returned: always
  type: bool
would_install:
  description: Where simulated, each package apt-get would install (C(name version)) or upgrade (C(name old -> new)).
  returned: when simulated
  type: list
  elements: str
  sample: ["jq 1.6-2.1+deb12u3", "libssl3 3.0.20-1~deb12u2 -> 3.0.22-1~deb12u2"]
why:
  description: Why apt runs, in words, or why it does not.
  returned: always
  type: str
  sample: every package installed and apt's lists current
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import apt_status


def lists_age() -> float | None:
    for path in apt_status.UPDATE_STAMPS:
        if os.path.exists(path):
            return time.time() - os.path.getmtime(path)
    return None


def judge(module: AnsibleModule) -> dict:
    p = module.params
    age = lists_age()
    specs = apt_status.parse_specs(p["name"])
    if specs is None:
        return apt_status.unjudged(age, "names only apt can judge")
    names = [name for name, _version in specs]
    rc, out, err = module.run_command(["dpkg-query", "-W", f"-f={apt_status.QUERY_FORMAT}", "--", *names])
    return apt_status.verdict(p, module.check_mode, specs, (rc, out, err), age)


def simulate(module: AnsibleModule, missing: list[str]) -> dict:
    """apt-get's simulation of installing the missing packages: what it would do, or why it cannot."""
    p = module.params
    argv = apt_status.simulate_argv(
        missing, p["install_recommends"], p["allow_downgrade"], p["allow_change_held_packages"]
    )
    rc, out, err = module.run_command(argv, environ_update={"LANG": "C", "LC_ALL": "C"})
    if rc != 0:
        errors = [line for line in err.splitlines() if line.startswith("E: ")] or [err.strip() or f"rc {rc}"]
        module.fail_json(
            msg=f"apt-get cannot install {', '.join(missing)}: {'; '.join(errors)}", stdout=out, stderr=err
        )
    changes, summary = apt_status.simulated(out)
    result = {"changed": True, "simulated": True, "would_install": changes, "stdout": out}
    if module._diff:
        result["diff"] = {"prepared": summary}
    return result


def main() -> None:
    module = AnsibleModule(argument_spec=apt_status.ARGUMENT_SPEC, supports_check_mode=True)
    result = {"changed": False, "simulated": False, **judge(module)}
    if module.check_mode and result["missing"] and not any("*" in spec for spec in result["missing"]):
        result.update(simulate(module, result["missing"]))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
