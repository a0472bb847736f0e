#!/usr/bin/python
"""Check a compute node's part in Slurm: slurmd running, known and reachable to slurmctld, the same munge key."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_health
short_description: Check that a compute node's slurmd runs, slurmctld reaches it, and its munge key is the cluster's
description:
  - Run it on a compute node where the slurm role is applied. Three records, each with a code and what to check
    next - C(slurm.slurmd) (C(systemctl is-active slurmd)), with I(credential) C(slurm.munge) (a credential
    made on the controller with C(munge -n) must decode here with C(unmunge); it does not when the keys
    differ), and C(slurm.node) (the node's state as C(scontrol) gets it from slurmctld).
  - slurmctld marks a node whose slurmd stopped answering C(DOWN) only after its SlurmdTimeout (5 minutes by
    default); C(slurm.slurmd) and C(slurm.munge) see the cause at once.
  - A node drained by hand warns (C(SLURM_DRAINED)); one drained by gpulab (a C(gpulab:) reason) passes, its
    reason shown, since the check that drained it reports the fault.
  - Where Slurm is not installed (no C(scontrol)), the records are C(unavailable).
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  node:
    description: The node's Slurm NodeName (gpulab's slurm.conf uses the inventory name).
    type: str
    required: true
  credential:
    description: A munge credential made on the Slurm controller (C(munge -n)), to decode here. Not logged.
    type: str
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: Make a munge credential on the controller
  ansible.builtin.command: munge -n
  register: credential
  changed_when: false
  no_log: true
  delegate_to: mgmt1
  run_once: true

- name: Check slurmd, the node's state and the munge key
  gpulab.cluster.slurm_health:
    node: "{{ inventory_hostname }}"
    credential: "{{ credential.stdout }}"
"""

RETURN = r"""
status:
  description: Worst status among the checks.
  returned: always
  type: str
checks:
  description: Records C(slurm.slurmd), with I(credential) C(slurm.munge), and C(slurm.node).
  returned: always
  type: list
  elements: dict
"""

from ansible_collections.gpulab.cluster.plugins.module_utils import slurm
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import start
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import exit_with_records, unavailable

ARGUMENT_SPEC = dict(node=dict(type="str", required=True), credential=dict(type="str", no_log=True))
TIMEOUT = ["timeout", "30"]  # a hung slurmctld or munged is a finding, not a wait


def main() -> None:
    module = start(ARGUMENT_SPEC, lambda p: None if p["node"] else "node must name the Slurm node")
    p = module.params
    if not module.get_bin_path("scontrol"):
        exit_with_records(
            module, [unavailable("slurm.node", "scontrol is not installed: the slurm role is not applied")]
        )
    _rc, active, _err = module.run_command(["systemctl", "is-active", "slurmd"])
    rc, out, err = module.run_command([*TIMEOUT, "scontrol", "-o", "show", "node", p["node"]])
    unmunged = None
    if p["credential"]:
        urc, uout, uerr = module.run_command([*TIMEOUT, "unmunge"], data=p["credential"])
        unmunged = (urc, uerr or uout)
    records = slurm.node_health(p["node"], active.strip(), (rc, out if rc == 0 else err or out), unmunged)
    exit_with_records(module, records)


if __name__ == "__main__":
    main()
