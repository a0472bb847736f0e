#!/usr/bin/python
"""Set each GPU's power limit from the inventory, within the range the GPU reports."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_power_limit
short_description: Set NVIDIA GPUs' power limits with nvidia-smi, refusing values the GPU does not allow
description:
  - Reads every GPU's UUID, enforced power limit and allowed range with
    C(nvidia-smi --query-gpu=index,uuid,power.limit,power.min_limit,power.max_limit,power.default_limit).
  - Sets C(nvidia-smi -i UUID -pl WATTS) on each GPU whose limit differs from I(limits) by more than 0.5 W.
  - Returns each GPU's limit by UUID (I(limits) in the result), for a boot unit that must find the same GPU
    whatever order the driver numbers them in at the next boot.
  - Nothing is set when any entry is refused (outside the GPU's range, a GPU the node does not have, a
    GPU that reports no range); the run fails naming I(variable) and each entry.
  - The limit lasts until the driver is unloaded or the node reboots; the role that calls this module
    also installs a boot unit that sets it again.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  limits:
    description:
      - Watts by GPU index as nvidia-smi numbers the GPUs now (C(0), C(1), ...), by UUID (C(GPU-...)), or C(all)
        for every GPU.
      - A UUID entry wins over an index entry, an index entry over C(all).
    type: dict
    required: true
  variable:
    description: The inventory variable the limits come from, named in every message.
    type: str
    default: nvidia_driver_power_limits
attributes:
  check_mode:
    description: Can run in check mode, reporting what a real run would do without doing it.
    support: full
    details: Reads the GPUs and reports the limits it would set.
  diff_mode:
    description: Returns a diff of what it changed, in diff mode.
    support: full
requirements: [nvidia-smi (the NVIDIA driver)]
"""

EXAMPLES = r"""
- name: Hold every GPU at 300 W, GPU 1 at 250 W
  gpulab.cluster.gpu_power_limit:
    limits: {all: 300, 1: 250}
  register: power

- name: Hold one GPU, whatever its index, at 200 W
  gpulab.cluster.gpu_power_limit:
    limits: {GPU-5f3b1a9e-2c44-8d1e-7f0a-1b2c3d4e5f60: 200}
"""

RETURN = r"""
gpus:
  description: Each GPU as read before any change (watts; null where the GPU reports none).
  returned: always
  type: list
  elements: dict
  sample:
    - {index: 0, uuid: GPU-ded94e46-7efe-4fdb-05a6-107ba87d51ba, limit: 700.0, min: 200.0, max: 700.0, default: 700.0}
changes:
  description: The limits set (or that would be, in check mode).
  returned: always
  type: list
  elements: dict
  sample: [{index: 0, uuid: GPU-ded94e46-7efe-4fdb-05a6-107ba87d51ba, from: 700.0, to: 300.0}]
limits:
  description: Every GPU's limit from I(limits), by UUID (what a boot unit sets), in index order.
  returned: success
  type: list
  elements: dict
  sample: [{index: 0, uuid: GPU-ded94e46-7efe-4fdb-05a6-107ba87d51ba, watts: 300.0}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import gpu_power, nvidia_smi
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import said


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            limits=dict(type="dict", required=True),
            variable=dict(type="str", default="nvidia_driver_power_limits"),
        ),
        supports_check_mode=True,
    )
    variable = module.params["variable"]
    smi = module.get_bin_path("nvidia-smi")
    if not smi:
        module.fail_json(msg=f"{variable} is set, but this node has no nvidia-smi: no driver to set GPU power limits")
    query = [smi, f"--query-gpu={','.join(nvidia_smi.POWER_FIELDS)}", "--format=csv,noheader,nounits"]
    rc, out, err = module.run_command(query, environ_update={"LC_ALL": "C"})
    if rc != 0:
        module.fail_json(msg=f"{variable}: could not read the GPUs' power limits: {said(rc, out, err, 300)}")
    try:
        gpus = nvidia_smi.parse_power_csv(out)
    except nvidia_smi.GpuParseError as exc:
        module.fail_json(msg=f"{variable}: {exc}")
    changes, problems = gpu_power.plan(gpus, module.params["limits"], variable)
    problems += [
        f"{variable}: GPU {gpu['index']} reports no UUID to set its limit by" for gpu in gpus if not gpu["uuid"]
    ]
    if problems:
        module.fail_json(msg="; ".join(problems), gpus=gpus)
    if not module.check_mode:
        for change in changes:
            command = ["-i", change["uuid"], "-pl", f"{change['to']:g}"]
            rc, out, err = module.run_command([smi, *command])
            if rc != 0:
                module.fail_json(
                    msg=f"nvidia-smi {' '.join(command)} (GPU {change['index']}) failed: {said(rc, out, err, 300)}",
                    gpus=gpus,
                )
    diff = {
        "before": "".join(f"GPU {c['index']}: {c['from']} W\n" for c in changes),
        "after": "".join(f"GPU {c['index']}: {c['to']:g} W\n" for c in changes),
    }
    limits = gpu_power.per_gpu(gpus, module.params["limits"], variable)
    module.exit_json(changed=bool(changes), gpus=gpus, changes=changes, limits=limits, diff=diff)


if __name__ == "__main__":
    main()
