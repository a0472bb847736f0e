#!/usr/bin/python
"""Read what a role's steps depend on, in one step: files, units and, on a Ceph monitor, what the cluster says."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_state
short_description: Read the files, units and Ceph cluster a role's steps depend on, in one step
description:
  - Read only. A role reads a node once with it and skips the steps whose work is already done (a key
    made, a daemon running, a manager module on, a file system there), where each of them was a probe or
    a task of its own - the ceph role on its monitor hosts, the slurm role for its daemons.
  - I(paths) - each path's owner, group and mode, or null where it does not exist.
  - I(contents) - each small text file's content, or null where it does not exist; not for secrets,
    which would show in the task's result.
  - I(units) - each unit's state from one C(systemctl show).
  - With I(ceph), where I(admin_keyring) exists - C(ceph status) and C(ceph fs ls), each under
    I(timeout); monitors that do not answer leave C(ceph.answered) false with the reason, which is not
    a failure (the role then starts them and waits for the quorum as before).
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  paths:
    description: Files and directories to look at.
    type: list
    elements: path
    default: []
  contents:
    description: Small text files to read whole (a settings file the role merges into, a record it left).
    type: list
    elements: path
    default: []
  units:
    description: systemd units to read (C(ceph-mon@storage1)).
    type: list
    elements: str
    default: []
  ceph:
    description: Ask the Ceph cluster as well (on a monitor host, which holds the admin keyring).
    type: bool
    default: false
  admin_keyring:
    description: Ceph's admin keyring; without it the cluster is not asked.
    type: path
    default: /etc/ceph/ceph.client.admin.keyring
  timeout:
    description: Seconds each C(ceph) call may take.
    type: int
    default: 10
extends_documentation_fragment:
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: Read this monitor's keys, daemons and cluster
  gpulab.cluster.node_state:
    paths: [/var/lib/ceph/gpulab/mon.keyring, /var/lib/ceph/mon/ceph-storage1/keyring]
    units: [ceph-mon@storage1, ceph-mgr@storage1]
    ceph: true
  register: ceph_state

- name: Start the monitor where it is not running
  ansible.builtin.systemd_service:
    name: ceph-mon@storage1
    enabled: true
    state: started
  when: "'ceph-mon@storage1' not in ceph_state.running"
"""

RETURN = r"""
paths:
  description: Each of I(paths) as C(owner:group mode), or null where it does not exist.
  returned: always
  type: dict
  sample: {/var/lib/ceph/gpulab: "ceph:ceph 0700", /var/lib/ceph/mds/ceph-storage1/keyring: null}
contents:
  description: Each of I(contents) as text, or null where it does not exist.
  returned: always
  type: dict
  sample: {/etc/docker/daemon.json: '{"log-driver": "journald"}', /var/lib/gpulab/nvidia-driver.json: null}
units:
  description:
    - Each of I(units) - C(active) (running or starting), C(enabled) (or static), C(load) (systemd's LoadState).
  returned: always
  type: dict
  sample: {ceph-mon@storage1: {active: true, enabled: true, load: loaded}}
running:
  description: The units of I(units) that are both active and enabled, in the order given - those a role need not start.
  returned: always
  type: list
  elements: str
  sample: [ceph-mon@storage1]
ceph:
  description:
    - C(answered) - whether the Ceph cluster was asked and answered; C(why) - why not, else null.
    - C(quorum) - the monitors in quorum; C(health) - C(HEALTH_OK), C(HEALTH_WARN) or C(HEALTH_ERR), with
      C(checks) naming Ceph's checks and their messages; C(mgr_modules) - the managers' enabled modules;
      C(fs) - the file systems' names. Empty or null where the cluster did not answer.
  returned: always
  type: dict
  sample:
    answered: true
    why: null
    quorum: [storage1]
    health: HEALTH_OK
    checks: {}
    mgr_modules: [iostat, nfs, prometheus, restful]
    fs: [gpulabfs]
"""

import grp
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import ceph, systemd

ARGUMENT_SPEC = dict(
    paths=dict(type="list", elements="path", default=[]),
    contents=dict(type="list", elements="path", default=[]),
    units=dict(type="list", elements="str", default=[]),
    ceph=dict(type="bool", default=False),
    admin_keyring=dict(type="path", default="/etc/ceph/ceph.client.admin.keyring"),
    timeout=dict(type="int", default=10),
)
MAX_CONTENT = 1 << 20  # bytes: contents is for settings files and records, not data
NOT_ASKED = {"answered": False, "quorum": [], "health": None, "checks": {}, "mgr_modules": [], "fs": None}


def describe(path: str) -> str | None:
    """`owner:group mode` of a path, or None where it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    owner = _name(pwd.getpwuid, st.st_uid)
    group = _name(grp.getgrgid, st.st_gid)
    return f"{owner}:{group} {stat.S_IMODE(st.st_mode):04o}"


def content(module: AnsibleModule, path: str) -> str | None:
    """A small text file's content, or None where it does not exist."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONTENT + 1)
    except FileNotFoundError:
        return None
    except OSError as error:
        module.fail_json(msg=f"node_state: {path} could not be read: {error.strerror}")
    if len(data) > MAX_CONTENT:
        module.fail_json(msg=f"node_state: {path} is over {MAX_CONTENT} bytes; contents reads small text files")
    return data.decode(errors="replace")


def _name(lookup, number: int) -> str:
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def read_units(module: AnsibleModule, names: list[str]) -> dict[str, dict]:
    if not names:
        return {}
    rc, out, err = module.run_command(["systemctl", "show", "-p", ",".join(systemd.PROPERTIES), *names])
    if rc != 0:
        module.fail_json(msg=f"systemctl show failed (rc {rc}): {(err or out).strip()}")
    try:
        units = systemd.parse_show(out, len(names))
    except systemd.SystemdParseError as error:
        module.fail_json(msg=f"node_state: {error}")
    return {
        name: {
            "active": unit["ActiveState"] in systemd.RUNNING,
            "enabled": unit["UnitFileState"] in systemd.ENABLED,
            "load": unit["LoadState"],
        }
        for name, unit in zip(names, units, strict=True)
    }


def ask(module: AnsibleModule, *what: str) -> tuple[str | None, str | None]:
    """(output, None), or (None, why) where `ceph <what>` did not answer."""
    timeout = module.params["timeout"]
    rc, out, err = module.run_command(["timeout", str(timeout), "ceph", *what, "-f", "json"])
    if rc == 124:
        return None, f"ceph {' '.join(what)} did not answer in {timeout} s"
    if rc != 0:
        return None, f"ceph {' '.join(what)} failed (rc {rc}): {(err or out).strip()[-300:]}"
    return out, None


def read_ceph(module: AnsibleModule) -> dict:
    if not module.params["ceph"]:
        return dict(NOT_ASKED, why="not asked")
    if not os.path.exists(module.params["admin_keyring"]):
        return dict(NOT_ASKED, why=f"no admin keyring here ({module.params['admin_keyring']})")
    status, why = ask(module, "status")
    if why:
        return dict(NOT_ASKED, why=why)
    listed, why = ask(module, "fs", "ls")
    if why:
        return dict(NOT_ASKED, why=why)
    try:
        return dict(ceph.cluster(status, listed), answered=True, why=None)
    except ceph.CephParseError as error:
        module.fail_json(msg=f"node_state: {error}")


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.run_command_environ_update = {"LC_ALL": "C", "LANG": "C"}
    if module.params["timeout"] < 1:
        module.fail_json(msg=f"timeout must be at least 1, got {module.params['timeout']}")
    units = read_units(module, module.params["units"])
    module.exit_json(
        changed=False,
        paths={path: describe(path) for path in module.params["paths"]},
        contents={path: content(module, path) for path in module.params["contents"]},
        units=units,
        running=[name for name, unit in units.items() if unit["active"] and unit["enabled"]],
        ceph=read_ceph(module),
    )


if __name__ == "__main__":
    main()
