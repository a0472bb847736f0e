#!/usr/bin/python
"""Gather every validation module's records into one verdict and write report.json and report.html."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: validation_report
short_description: Write the cluster report (JSON and self-contained HTML) and give one verdict
description:
  - Takes the registered results of M(gpulab.cluster.gpu_health), M(gpulab.cluster.rdma_health),
    M(gpulab.cluster.nccl_test) and M(gpulab.cluster.net_bandwidth) per node, and of
    M(gpulab.cluster.cluster_consistency) and M(gpulab.cluster.collective_bench) for the cluster.
  - Writes C(DEST/<UTC time>/report.json) and C(report.html) (inline CSS and SVG, no scripts, no external assets)
    and points C(DEST/latest) at them. Run it on the controller, delegated to localhost.
  - The verdict is the worst status of any check; a node that returned nothing at all fails.
    C(unavailable) never fails.
  - The report is output, not managed state, so the task reports C(changed=false), in check mode too.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  nodes:
    description: Host to C({gpu, rdma, nccl, network}) registered results (missing or skipped ones are shown so).
    type: dict
    required: true
  cluster:
    description:
      - C({consistency, nccl_across, collective, training}) registered results - M(gpulab.cluster.cluster_consistency),
        M(gpulab.cluster.nccl_test) across nodes, M(gpulab.cluster.collective_bench) from node rank 0, and
        M(gpulab.cluster.training_smoke).
    type: dict
    default: {}
  dest:
    description: Directory under which each run's report directory is created.
    type: path
    required: true
  title:
    description: Heading of the report.
    type: str
    default: gpulab cluster report
  efficiency_healthy:
    description: Scaling efficiency band shown as healthy (as given to collective_bench).
    type: float
    default: 0.9
  efficiency_acceptable:
    description: Scaling efficiency below which the band is shown as failing.
    type: float
    default: 0.7
  cost:
    description:
      - The inputs of the report's cost section (electricity and cloud prices; see the validation role's
        C(validation_cost)). Each GPU's power comes from the C(gpuN.power) records of M(gpulab.cluster.gpu_health).
      - Omitted or empty, the report has no cost estimate.
    type: dict
    suboptions:
      price_per_kwh: {description: Electricity price per kWh., type: float, required: true}
      base_watts: {description: Base load per node (all but the GPUs) in W., type: float, required: true}
      utilization: {description: Share of the time the GPUs train (0-1)., type: float, required: true}
      measured_utilization:
        description: The GPUs' mean utilization (0-1) as Prometheus measured it; used instead of I(utilization)
          when given.
        type: float
      years: {description: Years compared., type: float, default: 3}
      hardware_cost: {description: What the cluster's hardware cost., type: float, default: 0}
      cloud_gpu_hour: {description: Cloud price of one GPU-hour of the same class., type: float, required: true}
      currency: {description: Currency of the prices., type: str, default: EUR}
  baseline:
    description:
      - A report.json of the cluster's last good run to compare with. The report then opens with what changed
        since it - each metric that moved the wrong way by more than its tolerance fails (C(BASELINE_REGRESSION)),
        with the baseline's value, today's and the tolerance; a version that changed warns. A path with no file
        yet says so (C(BASELINE_MISSING), never a failure).
      - A file that is not a gpulab report, or one from another cluster (no node in common), is refused.
    type: path
  tolerances:
    description:
      - Tolerances by metric family over the defaults - C(bandwidth) (0.10) and C(time) (0.15) as shares of the
        baseline's value; C(efficiency) (0.05), C(temperature) (5), C(ecc_corrected) (1000), C(counters) (0)
        and C(pcie_width) (0) absolute.
    type: dict
    default: {}
extends_documentation_fragment:
  - gpulab.cluster.checks
attributes:
  check_mode:
    description: Can run in check mode, reporting what a real run would do without doing it.
    support: full
    details: Writes the report in check mode too (output, not the nodes' state); never reports a change.
  diff_mode:
    description: Returns a diff of what it changed, in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Write the report and fail on any failed check
  gpulab.cluster.validation_report:
    nodes: "{{ dict(groups['all'] | zip(groups['all'] | map('extract', hostvars, '__validate_results'))) }}"
    cluster:
      consistency: "{{ __consistency }}"
    dest: "{{ playbook_dir }}/reports"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changed_since:
  description:
    - With I(baseline), the comparison - C(since) (the baseline's date, null when none is stored yet),
      C(regressions) and C(changes) (each with C(baseline), C(value) and C(tolerance)), C(compared), C(improved).
  returned: always (null without I(baseline))
  type: dict
verdict:
  description: pass, unavailable, warn or fail.
  returned: always
  type: str
failures:
  description: Every failed or warning check - node, section, check, status, message, and the next thing to check.
  returned: always
  type: list
  elements: dict
node_problems:
  description: Each node with a failed check, and its first failed check (what a Slurm drain reason says).
  returned: always
  type: dict
  sample: {gpu2: "gpu_count: 1 GPU found, 2 expected"}
report_dir:
  description: The directory written.
  returned: always
  type: str
html:
  description: Path of report.html.
  returned: always
  type: str
counts:
  description: Checks per status.
  returned: always
  type: dict
"""

import datetime
import json
import os

from ansible_collections.gpulab.cluster.plugins.module_utils import baseline as bl
from ansible_collections.gpulab.cluster.plugins.module_utils import report as rp
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import start
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import blocking_findings


def _new_dir(dest: str, now: datetime.datetime) -> str:
    base = os.path.join(dest, now.strftime("%Y%m%dT%H%M%SZ"))
    path, n = base, 1
    while os.path.exists(path):
        n += 1
        path = f"{base}-{n}"
    os.makedirs(path, mode=0o755)
    return path


ARGUMENT_SPEC = dict(
    nodes=dict(type="dict", required=True),
    cluster=dict(type="dict", default={}),
    dest=dict(type="path", required=True),
    title=dict(type="str", default="gpulab cluster report"),
    efficiency_healthy=dict(type="float", default=0.9),
    efficiency_acceptable=dict(type="float", default=0.7),
    baseline=dict(type="path"),
    tolerances=dict(type="dict", default={}),
    cost=dict(
        type="dict",
        options=dict(
            price_per_kwh=dict(type="float", required=True),
            base_watts=dict(type="float", required=True),
            utilization=dict(type="float", required=True),
            measured_utilization=dict(type="float"),
            years=dict(type="float", default=3),
            hardware_cost=dict(type="float", default=0),
            cloud_gpu_hour=dict(type="float", required=True),
            currency=dict(type="str", default="EUR"),
        ),
    ),
)


def input_problem(p: dict) -> str | None:
    """The first setting that cannot be reported, as a message naming it; None when all can."""
    if not p["nodes"]:
        return "nodes is empty: pass host -> registered results for every node validated"
    cost_problems = rp.cost.problems(p["cost"]) if p["cost"] else []
    problems = ["cost: " + "; ".join(cost_problems)] if cost_problems else []
    problems += bl.tolerance_problems(p["tolerances"], "tolerances")
    return "; ".join(problems) or None


def read_baseline(module, path: str | None) -> rp.Baseline | None:
    """The baseline to compare with (its report None when no file is there yet); fails on one that cannot be."""
    if not path:
        return None
    if not os.path.exists(path):
        return rp.Baseline(path, None, module.params["tolerances"])
    try:
        with open(path, encoding="utf-8") as handle:
            stored = json.load(handle)
    except (OSError, ValueError) as exc:
        module.fail_json(msg=f"baseline {path} cannot be read as a gpulab report: {exc}")
    problem = bl.baseline_problem(stored, {"nodes": module.params["nodes"]}, path)
    if problem:
        module.fail_json(msg=problem)
    return rp.Baseline(path, stored, module.params["tolerances"])


def main() -> None:
    module = start(ARGUMENT_SPEC, input_problem)
    p = module.params
    now = datetime.datetime.now(datetime.UTC)
    baseline = read_baseline(module, p["baseline"])
    data = rp.build(p["nodes"], p["cluster"], now.isoformat(timespec="seconds"), p["title"], p["cost"], baseline)
    try:
        os.makedirs(p["dest"], exist_ok=True)
        out = _new_dir(p["dest"], now)
        with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
        page = rp.render_html(data, p["efficiency_healthy"], p["efficiency_acceptable"])
        with open(os.path.join(out, "report.html"), "w", encoding="utf-8") as handle:
            handle.write(page)
        latest = os.path.join(p["dest"], "latest")
        if os.path.islink(latest):
            os.unlink(latest)
        if not os.path.exists(latest):
            os.symlink(os.path.basename(out), latest)
    except OSError as exc:
        module.fail_json(msg=f"could not write the report under {p['dest']}: {exc}")

    result = {
        "changed": False,
        "verdict": data["verdict"],
        "verdict_text": data["verdict_text"],
        "counts": data["counts"],
        "failures": data["failures"],
        "node_problems": data["node_problems"],
        "report_dir": out,
        "html": os.path.join(out, "report.html"),
        "changed_since": data["changed_since"],
    }
    bad = blocking_findings(data["failures"], p["fail_on"])
    if bad:
        lines = "; ".join(f"{f['node']} {f['check']}: {f['message']}" for f in bad)
        module.fail_json(
            msg=f"{data['verdict_text']} - {len(bad)} finding(s): {lines}. Report: {result['html']}", **result
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
