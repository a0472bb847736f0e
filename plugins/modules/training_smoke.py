#!/usr/bin/python
"""Run the training smoke benchmark as Slurm jobs on 1 node and on N, and return gpulab check records."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: training_smoke
short_description: Run the training smoke benchmark (digits to a fixed accuracy) as Slurm jobs on 1 and N nodes
description:
  - Submits the training role's C(ddp) job template with C(gpulab-sbatch) and waits for it, once per entry of
    I(node_counts), on the first nodes of I(hosts) that Slurm can use now (drained and down nodes are left out
    and named).
  - The job trains the digits example until I(target_accuracy) test accuracy, at most I(max_epochs) epochs, with
    no checkpoints. Each run is one record, C(training_smoke.1_node), C(training_smoke.2_nodes), ...; pass when
    it reached the target on the nodes asked for, with its seconds to the target as the value.
  - It proves a job trains end to end across nodes. It is not MLPerf.
  - A node without C(gpulab-sbatch) or the example (the training role not applied) fails the run.
  - Run it on one node that mounts I(output_dir) as the job's nodes do (CephFS).
version_added: 0.2.0
author: gpulab developers (@gpulab)
options:
  hosts:
    description: Slurm node names to run on, in order.
    type: list
    elements: str
    required: true
  node_counts:
    description: How many nodes each run takes; empty for 1 and all the usable I(hosts).
    type: list
    elements: int
    default: []
  output_dir:
    description: A directory every node shares, for the jobs' output (created if missing; a passing run's is removed).
    type: path
    required: true
  submit:
    description: The training role's submit helper.
    type: path
    default: /usr/local/bin/gpulab-sbatch
  script:
    description: The example training script the job runs.
    type: path
    default: /opt/gpulab/jobs/train_digits.py
  target_accuracy:
    description: The published target, test accuracy as a fraction.
    type: float
    default: 0.95
  gpus_per_node:
    description: GPUs each node declares (C(gpulab_gpu_count)); above 0 the run must train on CUDA with
      one rank per GPU, or it fails. 0 (a cluster without GPUs) judges the CPU run as it is.
    type: int
    default: 0
  max_epochs:
    description: Epochs the run may take to reach the target.
    type: int
    default: 30
  timeout:
    description:
      - Seconds each job may take, queueing included; also the job's Slurm time limit (in whole minutes).
      - A job not done by then fails the check (C(SMOKE_TIMEOUT)) and is cancelled (C(scancel JOBID)). The job is
        followed with C(scontrol show job) every second.
    type: int
    default: 900
extends_documentation_fragment:
  - gpulab.cluster.checks
attributes:
  check_mode:
    description: Can run in check mode, reporting what a real run would do without doing it.
    support: full
    details: In check mode no job is submitted and no record is made.
  diff_mode:
    description: Returns a diff of what it changed, in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Run the training smoke benchmark on 1 node and on every compute node
  gpulab.cluster.training_smoke:
    hosts: "{{ groups['compute'] }}"
    output_dir: /mnt/cephfs/checkpoints/gpulab-smoke
  run_once: true
  delegate_to: "{{ groups['compute'][0] }}"
"""

RETURN = r"""
checks:
  description: One record per run (C(training_smoke.N_nodes)), and C(training_smoke.nodes) when nodes were left out.
  returned: always
  type: list
  elements: dict
status:
  description: Worst status among the checks.
  returned: always
  type: str
runs:
  description: Node count to the figures the job printed (epochs_to_target, seconds_to_target, samples_per_second, ...).
  returned: always
  type: dict
  sample: {"1": {"world_size": 1, "nodes": [gpu1], "reached": true, "epochs_to_target": 3, "seconds_to_target": 0.5}}
"""

import glob
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import collective as cb
from ansible_collections.gpulab.cluster.plugins.module_utils import training as tr
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import AT_LEAST_1, NOT_NEGATIVE, SHARE, start
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import exit_with_records, failed, said, unavailable
from ansible_collections.gpulab.cluster.plugins.module_utils.slurm import job_end, usable_hosts


def wait_for_job(module: AnsibleModule, job: str, seconds: float) -> tuple[str, str] | None:
    """(state, exit code) once the job has ended, asking slurmctld every second; None past `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rc, out, err = module.run_command(["scontrol", "-o", "show", "job", job])
        if rc != 0:  # no longer in slurmctld's memory (MinJobAge): it ended, how is unknown here
            return "GONE", said(rc, out, err)
        ended = job_end(out.strip())
        if ended:
            return ended
        time.sleep(1)
    return None


def run_once(module: AnsibleModule, hosts: list[str]) -> tuple[object, dict | None]:
    """(record, figures) of one job on these hosts."""
    p = module.params
    nodes = len(hosts)
    output = os.path.join(p["output_dir"], f"gpulab-smoke-{nodes}n-%j.out")
    cmd = tr.submit_command(
        p["submit"], p["script"], hosts, output, p["target_accuracy"], p["max_epochs"], p["timeout"]
    )
    name = tr.check_name(nodes)
    rc, out, err = module.run_command(cmd)
    job = next((w for w in out.split() if w.isdigit()), None)
    if rc != 0 or job is None:
        return failed(
            name, f"{os.path.basename(p['submit'])} exited {rc}: {said(rc, out, err, 300)}", code="SMOKE_FAILED"
        ), None
    ended = wait_for_job(module, job, p["timeout"])
    written = glob.glob(output.replace("%j", job))
    text = ""
    for path in written:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text += handle.read()
    kept = f" (its output: {', '.join(written)})" if written else ""
    if ended is None:
        # Cancel it (queued or running), or it holds its nodes.
        cancel_rc, _out, cancel_err = module.run_command(["scancel", job])
        cancelled = "; it was cancelled" if cancel_rc == 0 else f"; scancel failed: {cancel_err.strip()[:200]}"
        return failed(
            name,
            f"job {job} did not finish in {p['timeout']} s (queued behind other jobs, or hung){cancelled}{kept}",
            code="SMOKE_TIMEOUT",
        ), None
    state, exit_code = ended
    if state != "COMPLETED":
        return failed(
            name,
            f"job {job} ended {state} (exit code {exit_code}): {cb.failure_summary(text)}{kept}",
            code="SMOKE_FAILED",
        ), None
    try:
        figures = tr.parse_result(text)
    except tr.SmokeParseError as exc:
        return failed(name, f"job {job} finished, but {exc}{kept}", code="SMOKE_FAILED"), None
    for path in written:  # kept only when the run failed
        os.unlink(path)
    return tr.record(nodes, figures, p["target_accuracy"], p["max_epochs"], p["gpus_per_node"]), figures


ARGUMENT_SPEC = dict(
    hosts=dict(type="list", elements="str", required=True),
    node_counts=dict(type="list", elements="int", default=[]),
    output_dir=dict(type="path", required=True),
    submit=dict(type="path", default="/usr/local/bin/gpulab-sbatch"),
    script=dict(type="path", default="/opt/gpulab/jobs/train_digits.py"),
    target_accuracy=dict(type="float", default=0.95),
    gpus_per_node=dict(type="int", default=0),
    max_epochs=dict(type="int", default=30),
    timeout=dict(type="int", default=900),
)
BOUNDS = {"gpus_per_node": NOT_NEGATIVE, "target_accuracy": SHARE, "max_epochs": AT_LEAST_1, "timeout": AT_LEAST_1}


def input_problem(p: dict) -> str | None:
    """The first setting BOUNDS cannot say that cannot be used, as a message naming it; None when all can."""
    if not p["hosts"]:
        return "hosts is empty: name the Slurm nodes to run on"
    if any(n < 1 for n in p["node_counts"]):
        return f"node_counts must be 1 or more each, got {p['node_counts']}"
    return None


def main() -> None:
    module = start(ARGUMENT_SPEC, input_problem, BOUNDS)
    p = module.params
    if module.check_mode:
        exit_with_records(module, [unavailable("training_smoke.run", "check mode: no job submitted")], runs={})

    missing = [path for path in (p["submit"], p["script"]) if not os.path.exists(path)]
    if missing:
        record = failed(
            "training_smoke.run",
            f"{' and '.join(missing)} not found on {os.uname().nodename}: apply the training role (--tags training)",
            code="TRAINING_MISSING",
        )
        exit_with_records(module, [record], runs={})

    usable, left = usable_hosts(module.run_command, p["hosts"])
    notes = [unavailable("training_smoke.nodes", left)] if left else []
    counts = sorted(set(p["node_counts"] or [1, max(len(usable), 1)]))
    os.makedirs(p["output_dir"], exist_ok=True)
    records, runs = list(notes), {}
    for count in counts:
        if count > len(usable):
            records.append(
                unavailable(tr.check_name(count), f"{count} nodes asked for, Slurm can use {len(usable)} now")
            )
            continue
        record, figures = run_once(module, usable[:count])
        records.append(record)
        if figures:
            runs[str(count)] = figures
    exit_with_records(module, records, runs=runs)


if __name__ == "__main__":
    main()
