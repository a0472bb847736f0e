#!/usr/bin/python
"""Drain Slurm nodes that failed a gpulab check, and resume the ones it drained that are healthy again."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_drain
short_description: Drain failing Slurm nodes with a gpulab reason, resume only those it drained
description:
  - For each node in I(nodes), reads its state and reason with C(scontrol). A node listed in I(problems)
    is drained with reason C(<prefix> <problem>); a node that is healthy now and whose reason starts
    with I(prefix) is resumed.
  - A node drained with any other reason (an administrator's) is never touched, drained or resumed.
  - Run it where C(scontrol) reaches slurmctld (the controller). Without C(scontrol) it changes nothing
    and says so.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  nodes:
    description: Slurm node names this run judged.
    type: list
    elements: str
    required: true
  problems:
    description: Node name to the problem found on it (nodes not listed are healthy).
    type: dict
    default: {}
  prefix:
    description: Reason prefix that marks this tool's drains.
    type: str
    default: "gpulab: validate:"
attributes:
  check_mode:
    description: Can run in check mode, reporting what a real run would do without doing it.
    support: full
    details: Reports what it would drain and resume.
  diff_mode:
    description: Returns a diff of what it changed, in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Drain the nodes validation failed
  gpulab.cluster.slurm_drain:
    nodes: [gpu1, gpu2]
    problems: {gpu2: "gpu_count: 1 GPU found, 2 expected"}
  delegate_to: mgmt1
"""

RETURN = r"""
drained:
  description: Nodes drained (or whose gpulab reason was updated).
  returned: always
  type: list
  elements: str
resumed:
  description: Nodes resumed.
  returned: always
  type: list
  elements: str
left_alone:
  description: Nodes with a problem that someone else had drained already, with their reason.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import slurm

# Slurm truncates long reasons; keep ours readable in sinfo -R.
MAX_REASON = 200


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            nodes=dict(type="list", elements="str", required=True),
            problems=dict(type="dict", default={}),
            prefix=dict(type="str", default=slurm.DRAIN_PREFIXES["validate"]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not p["prefix"].startswith(slurm.GPULAB_REASON):
        module.fail_json(
            msg=f"prefix must start with '{slurm.GPULAB_REASON}' so that only gpulab's drains are resumed, "
            f"got {p['prefix']!r}"
        )
    scontrol = module.get_bin_path("scontrol")
    if not scontrol:
        module.exit_json(changed=False, drained=[], resumed=[], left_alone={}, msg="scontrol not found: no Slurm here")
    drained, resumed, left_alone = [], [], {}
    for node in p["nodes"]:
        rc, out, err = module.run_command([scontrol, "-o", "show", "node", node], environ_update={"LC_ALL": "C"})
        if rc != 0:
            module.fail_json(msg=f"scontrol show node {node} failed: {err.strip() or out.strip()}")
        try:
            state, reason = slurm.parse_node_line(out.strip())
        except slurm.SlurmParseError as exc:
            module.fail_json(msg=str(exc))
        problem = p["problems"].get(node)
        problem = " ".join(str(problem).split())[:MAX_REASON] if problem is not None else None
        action = slurm.drain_action(state, reason, problem, p["prefix"])
        if problem is not None and action is None and reason and not reason.startswith(p["prefix"]):
            left_alone[node] = reason
        if action is None:
            continue
        update = ["State=DRAIN", f"Reason={p['prefix']} {problem}"] if action == "drain" else ["State=RESUME"]
        if not module.check_mode:
            rc, out, err = module.run_command([scontrol, "update", f"NodeName={node}", *update])
            if rc != 0:
                module.fail_json(msg=f"scontrol update {node} {update[0]} failed: {err.strip() or out.strip()}")
        (drained if action == "drain" else resumed).append(node)
    module.exit_json(changed=bool(drained or resumed), drained=drained, resumed=resumed, left_alone=left_alone)


if __name__ == "__main__":
    main()
