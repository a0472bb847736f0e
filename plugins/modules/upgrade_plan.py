#!/usr/bin/python
"""What a rolling upgrade would do on a node: the packages apt would upgrade, and whether it must reboot."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: upgrade_plan
short_description: List what an upgrade would change on a node and decide whether it must reboot
description:
  - Asks apt what a full upgrade would install or upgrade (C(apt-get -s dist-upgrade), a simulation
    that changes nothing and takes no lock). Held packages (the pinned driver, CUDA, NCCL) stay out.
  - Compares the pins of the roles an upgrade rolls (I(pins)) with what is installed (dpkg's
    database, or a virtualenv's wheels) and lists the pins the node does not meet yet.
  - Decides whether the node must reboot to run what is installed, comparing the running kernel with
    the newest one in C(/boot), and the loaded NVIDIA module with the installed one, and looking for
    C(/run/reboot-required).
  - In a container the decision is never to reboot (it runs its host's kernel); the reason it would
    have rebooted is still returned.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  packages:
    description: Ask apt which packages a full upgrade would change; false skips that question.
    type: bool
    default: true
  in_container:
    description: The node is a container (from the C(gpulab.cluster.in_container) filter).
    type: bool
    default: false
  pins:
    description:
      - The packages the rolled roles pin (each role's C(tasks/pins.yml) says which).
      - A pin is met when its package is installed with a version its I(version) pattern matches;
        an unversioned pin is met when the package is installed and apt has no upgrade for it.
    type: list
    elements: dict
    default: []
    suboptions:
      role:
        description: The role that installs the package.
        type: str
        required: true
      package:
        description: The Debian package, or with I(venv) the wheel's distribution name.
        type: str
        required: true
      version:
        description: A regular expression the installed version must match; empty for any version.
        type: str
        default: ""
      wanted:
        description: The pin in words, for the plan (C(nvidia_driver_version 535.216.03)).
        type: str
        required: true
      venv:
        description: The virtualenv the wheel is installed in; unset for a Debian package.
        type: path
extends_documentation_fragment:
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: See what an upgrade would change here
  gpulab.cluster.upgrade_plan:
    in_container: "{{ ansible_facts | gpulab.cluster.in_container }}"
  register: plan
"""

RETURN = r"""
pending:
  description: Packages a full upgrade would install or upgrade (installed is null for a new one).
  returned: always
  type: list
  elements: dict
  sample: [{package: tzdata, installed: 2026b-0+deb12u1, candidate: 2026f-0+deb12u1}]
reboot:
  description: Whether the node should be rebooted now.
  returned: always
  type: bool
reboot_reasons:
  description: Why it would need a reboot (empty when it runs what is installed).
  returned: always
  type: list
  elements: str
decision:
  description: The reboot decision in words.
  returned: always
  type: str
  sample: "no reboot needed: the node runs what is installed"
running_kernel:
  description: The running kernel release.
  returned: always
  type: str
boot_kernel:
  description: The kernel release the next boot starts (the newest in /boot); null where /boot has none.
  returned: always
  type: str
pin_moves:
  description: The pins not met yet (installed is null where the package is missing).
  returned: always
  type: list
  elements: dict
  sample: [{role: nvidia_driver, package: nvidia-smi, installed: 535.247.01-1~deb12u1,
            wanted: nvidia_driver_version 535.261.03, version: "^535[.]261[.]03(-|$)"}]
"""

import glob
import os
import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import upgrade


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def _installed(module: AnsibleModule, pins: list[dict]) -> dict[str, str]:
    """Installed versions of the pinned packages: dpkg's, or the wheels' in their virtualenvs."""
    installed = {}
    debs = sorted({pin["package"] for pin in pins if not pin["venv"]})
    if debs:
        dpkg_query = module.get_bin_path("dpkg-query", required=True)
        # Exit status 1: some package is unknown to dpkg (not installed), which the output leaves out.
        rc, out, err = module.run_command(
            [dpkg_query, "-W", "-f", "${Package}\t${Version}\t${db:Status-Status}\n", *debs]
        )
        if rc > 1:
            module.fail_json(msg=f"could not read the installed versions: dpkg-query exited {rc}: {err.strip()}")
        installed.update(upgrade.parse_dpkg_query(out))
    for pin in pins:
        if pin["venv"]:
            sites = glob.glob(f"{pin['venv']}/lib/python3*/site-packages")
            names = [name for site in sites for name in os.listdir(site)]
            version = upgrade.wheel_version(names, pin["package"])
            if version:
                installed[pin["package"]] = version
    return installed


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type="bool", default=True),
            in_container=dict(type="bool", default=False),
            pins=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    role=dict(type="str", required=True),
                    package=dict(type="str", required=True),
                    version=dict(type="str", default=""),
                    wanted=dict(type="str", required=True),
                    venv=dict(type="path"),
                ),
            ),
        ),
        supports_check_mode=True,
    )
    pins = module.params["pins"]
    pending = []
    # Unversioned Debian pins move with apt's candidates, so apt is asked for them too.
    if module.params["packages"] or any(not pin["version"] and not pin["venv"] for pin in pins):
        apt_get = module.get_bin_path("apt-get", required=True)
        rc, out, err = module.run_command(
            [apt_get, "-s", "-o", "Debug::NoLocking=true", "dist-upgrade"], environ_update={"LC_ALL": "C"}
        )
        if rc != 0:
            module.fail_json(
                msg=f"could not ask apt what an upgrade would change: apt-get -s exited {rc}: {err.strip()}"
            )
        pending = upgrade.parse_apt_simulation(out)
    moves = upgrade.pin_moves(pins, _installed(module, pins), pending)

    installed_nvidia = None
    modinfo = module.get_bin_path("modinfo")
    if modinfo:
        rc, out, _err = module.run_command([modinfo, "-F", "version", "nvidia"])
        installed_nvidia = out.strip() if rc == 0 and out.strip() else None
    try:
        vmlinuz = os.listdir("/boot")
    except OSError:
        vmlinuz = []
    running = platform.release()
    boot = upgrade.boot_kernel(vmlinuz)
    reasons = upgrade.reboot_reasons(
        running,
        boot,
        _read("/sys/module/nvidia/version"),
        installed_nvidia,
        os.path.exists("/run/reboot-required"),
    )
    decision = upgrade.reboot_decision(reasons, module.params["in_container"])
    module.exit_json(
        changed=False,
        pending=pending if module.params["packages"] else [],
        pin_moves=moves,
        reboot_reasons=reasons,
        running_kernel=running,
        boot_kernel=boot,
        **decision,
    )


if __name__ == "__main__":
    main()
