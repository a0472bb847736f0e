#!/usr/bin/python
"""Check Ceph's health and that every OSD the inventory declares is up and in."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ceph_health
short_description: Check Ceph's health and that every declared OSD is up and in
description:
  - Run it on a monitor host (it needs the admin keyring, which only monitor hosts hold). Two records -
    C(ceph.health) from C(ceph health detail) (HEALTH_OK passes, HEALTH_WARN warns and HEALTH_ERR fails, naming
    Ceph's own checks) and C(ceph.osds) from C(ceph osd stat) (every OSD up and in, and at least
    I(expected_osds) of them).
  - Each C(ceph) call runs under I(timeout); monitors that do not answer are a failure, not a wait.
  - Where Ceph is not installed (no C(ceph)), the records are C(unavailable).
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  expected_osds:
    description: The OSD devices the inventory gives Ceph (C(ceph_osd_devices) over the storage nodes).
    type: int
  timeout:
    description: Seconds each C(ceph) call may take.
    type: int
    default: 30
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: Check Ceph from its first monitor
  gpulab.cluster.ceph_health:
    expected_osds: 2
  delegate_to: "{{ ceph_mon_hosts[0] }}"
  run_once: true
"""

RETURN = r"""
status:
  description: Worst status among the checks.
  returned: always
  type: str
checks:
  description: Records C(ceph.health) and C(ceph.osds).
  returned: always
  type: list
  elements: dict
"""

from ansible_collections.gpulab.cluster.plugins.module_utils import ceph
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import AT_LEAST_1, NOT_NEGATIVE, start
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import exit_with_records, failed, said, unavailable

ARGUMENT_SPEC = dict(expected_osds=dict(type="int"), timeout=dict(type="int", default=30))
BOUNDS = {"expected_osds": NOT_NEGATIVE, "timeout": AT_LEAST_1}


def ask(module, what: list[str]) -> str:
    """What `ceph <what> -f json` prints; exits with a failure when the monitors do not answer."""
    timeout = module.params["timeout"]
    rc, out, err = module.run_command(["timeout", str(timeout), "ceph", *what, "-f", "json"])
    if rc != 0:
        outcome = f"did not answer in {timeout} s" if rc == 124 else f"failed: {said(rc, out, err)}"
        record = failed(
            "ceph.health",
            f"ceph {' '.join(what)} {outcome} (the monitors: systemctl status ceph-mon@*, ceph -s on a monitor host)",
            code="CEPH_UNREACHABLE",
        )
        exit_with_records(module, [record])
    return out


def main() -> None:
    module = start(ARGUMENT_SPEC, lambda p: None, BOUNDS)
    if not module.get_bin_path("ceph"):
        exit_with_records(module, [unavailable("ceph.health", "ceph is not installed: the ceph role is not applied")])
    try:
        records = [
            ceph.health(ask(module, ["health", "detail"])),
            ceph.osds(ask(module, ["osd", "stat"]), module.params["expected_osds"]),
        ]
    except ceph.CephParseError as exc:
        module.fail_json(msg=str(exc))
    exit_with_records(module, records)


if __name__ == "__main__":
    main()
