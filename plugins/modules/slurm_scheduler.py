#!/usr/bin/python
"""Check the Slurm controller's scheduling: preemption as slurmctld runs it, the QOS tiers, and GPUs held idle."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_scheduler
short_description: Check that slurmctld preempts as the inventory asks and that its QOS tiers are in accounting
description:
  - Run it on the Slurm controller. Records C(slurm.preemption) (C(PreemptType) and C(PreemptMode) from
    C(scontrol show config)) and, with I(preemption), C(slurm.qos) (each tier as C(sacctmgr show qos) has it - priority,
    which tiers preempt it, its mode and grace time, its wall-time cap).
  - Without I(preemption) and with preemption off in slurmctld, C(slurm.preemption) does not apply (C(n/a)).
    With I(preemption), a controller that does not preempt by QOS fails (C(SLURM_PREEMPTION_OFF)), as does a
    tier of I(tiers) missing from accounting (C(SLURM_QOS_MISSING)).
  - With I(gpu_utilization), C(slurm.idle_gpus) - every GPU a running job has held for at least I(idle_gpu_minutes)
    (C(scontrol -d -o show job), its GRES index) that did nothing in that time warns (C(GPU_IDLE_IN_JOB)). Slurm's
    index is the GPU's place in gres.conf's C(/dev/nvidia[0-N]), matched with the GPU collector's C(gpu) label
    (NVML's index); both follow the PCI order under NVIDIA's driver.
  - Where Slurm is not installed (no C(scontrol)), the record is C(unavailable).
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  preemption:
    description: The inventory asks for preemption by QOS (the slurm role's C(slurm_preemption)).
    type: bool
    default: false
  tiers:
    description: QOS tiers that must be in accounting (the names of C(slurm_preemption_tiers) where the inventory sets
      them); empty - every QOS accounting has is shown, none is required.
    type: list
    elements: str
    default: []
  gpu_utilization:
    description:
      - Prometheus's answer to C(max_over_time(gpulab_gpu_utilization_ratio[Nm])) (its C(data.result) vector, each
        GPU's C(instance) and C(gpu) labels with its highest utilization), or why Prometheus could not be asked (a
        string). Unset - no C(slurm.idle_gpus) record.
    type: raw
  idle_gpu_minutes:
    description: The window of I(gpu_utilization); jobs that started less long ago are not judged.
    type: int
    default: 30
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: Check preemption and its QOS tiers
  gpulab.cluster.slurm_scheduler:
    preemption: true
    tiers: [scavenger, normal, interactive]
  delegate_to: mgmt1
  run_once: true

- name: Also report GPUs that running jobs hold idle (utilization from Prometheus over 30 minutes)
  gpulab.cluster.slurm_scheduler:
    gpu_utilization: "{{ busy.json.data.result }}"
    idle_gpu_minutes: 30
  delegate_to: mgmt1
  run_once: true
"""

RETURN = r"""
status:
  description: Worst status among the checks.
  returned: always
  type: str
checks:
  description:
    - Records C(slurm.preemption) and, with I(preemption), C(slurm.qos) (its value - the tiers as sacctmgr shows them);
      with I(gpu_utilization), C(slurm.idle_gpus) (its value - how many GPUs were idle).
  returned: always
  type: list
  elements: dict
"""

from ansible_collections.gpulab.cluster.plugins.module_utils import slurm
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import AT_LEAST_1, start
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import exit_with_records, failed, said, unavailable

ARGUMENT_SPEC = dict(
    preemption=dict(type="bool", default=False),
    tiers=dict(type="list", elements="str", default=[]),
    gpu_utilization=dict(type="raw"),
    idle_gpu_minutes=dict(type="int", default=30),
)
TIMEOUT = ["timeout", "30"]  # a hung slurmctld or slurmdbd is a finding, not a wait


def main() -> None:
    module = start(ARGUMENT_SPEC, lambda p: None, {"idle_gpu_minutes": AT_LEAST_1})
    p = module.params
    if not module.get_bin_path("scontrol"):
        exit_with_records(
            module, [unavailable("slurm.preemption", "scontrol is not installed: the slurm role is not applied")]
        )
    rc, out, err = module.run_command([*TIMEOUT, "scontrol", "show", "config"])
    rows = []
    if p["preemption"] and rc == 0:
        qrc, qout, qerr = module.run_command(
            [*TIMEOUT, "sacctmgr", "-n", "-P", "show", "qos", "format=" + ",".join(slurm.QOS_FIELDS)]
        )
        try:
            rows = slurm.parse_parsable(qout, slurm.QOS_FIELDS) if qrc == 0 else None
        except slurm.SlurmParseError as exc:
            rows, qerr = None, str(exc)
        if rows is None:
            message = f"sacctmgr show qos failed ({(qerr or qout).strip()[:200]}): is slurmdbd running?"
            exit_with_records(module, [failed("slurm.qos", message, code="SLURM_DBD_UNREACHABLE")])
    records = slurm.scheduler_health((rc, out if rc == 0 else err or out), rows, p["preemption"], p["tiers"])
    if p["gpu_utilization"] is not None:
        records.append(idle_gpus(module, p["gpu_utilization"], p["idle_gpu_minutes"]))
    exit_with_records(module, records)


def idle_gpus(module, answer, minutes):
    """slurm.idle_gpus: the running jobs' GPUs against Prometheus's answer (or why there is none)."""
    rc, out, err = module.run_command([*TIMEOUT, "scontrol", "-d", "-o", "show", "job"])
    if rc != 0:
        return failed(
            "slurm.idle_gpus", f"scontrol show job failed: {said(rc, out, err)}", code="SLURM_CTLD_UNREACHABLE"
        )
    try:
        busy = answer if isinstance(answer, str) else slurm.gpu_busy(answer)
    except (slurm.SlurmParseError, KeyError, IndexError, TypeError, ValueError) as exc:
        busy = f"not Prometheus's answer: {exc}"
    return slurm.idle_gpus(slurm.running_gpu_jobs(out), busy, minutes)


if __name__ == "__main__":
    main()
