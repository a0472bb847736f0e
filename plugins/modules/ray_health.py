#!/usr/bin/python
"""Check the standing Ray cluster: the head answers and every declared worker is alive with its resources."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ray_health
short_description: Check that the Ray head answers and every declared worker is alive with its CPUs and GPUs
description:
  - Run it on the Ray head. It reads the cluster the ray role described there (I(cluster_file) - each worker's
    address, CPUs and declared GPUs) and asks the dashboard for Ray's nodes (C(ray list nodes)) under I(timeout).
  - One record per worker, C(ray.worker.HOST) - alive at its address and offering what it declares, or
    C(RAY_WORKER_MISSING), or C(RAY_RESOURCES) where it offers other CPUs or GPUs - then C(ray.workers), the count
    of live workers against those declared.
  - A head that does not answer in time fails (C(RAY_HEAD_DOWN)). Where the inventory enables Ray (I(expected))
    and the head holds no description, C(RAY_NOT_DEPLOYED) fails (C(unavailable) in check mode); where it does
    not, the record is C(n/a).
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  expected:
    description: Whether the inventory enables the standing Ray cluster (C(ray_enabled)).
    type: bool
    default: true
  cluster_file:
    description: The ray role's description of the cluster on the head.
    type: path
    default: /etc/gpulab/ray-cluster.json
  timeout:
    description: Seconds C(ray list nodes) may take.
    type: int
    default: 30
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: Check the Ray cluster from its head
  gpulab.cluster.ray_health:
    expected: "{{ ray_enabled | default(false) }}"
  delegate_to: mgmt1
  run_once: true
"""

RETURN = r"""
status:
  description: Worst status among the checks.
  returned: always
  type: str
checks:
  description: Records C(ray.worker.HOST) for each declared worker, and C(ray.workers).
  returned: always
  type: list
  elements: dict
"""

import json
import os

from ansible_collections.gpulab.cluster.plugins.module_utils import ray
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import (
    AT_LEAST_1,
    run_with_deadline,
    start,
)
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import (
    exit_with_records,
    failed,
    not_applicable,
    said,
    unavailable,
)

ARGUMENT_SPEC = dict(
    expected=dict(type="bool", default=True),
    cluster_file=dict(type="path", default="/etc/gpulab/ray-cluster.json"),
    timeout=dict(type="int", default=30),
)
BOUNDS = {"timeout": AT_LEAST_1}


def main() -> None:
    module = start(ARGUMENT_SPEC, lambda p: None, BOUNDS)
    path, timeout = module.params["cluster_file"], module.params["timeout"]
    if not os.path.exists(path):
        if module.params["expected"] and module.check_mode:
            record = unavailable("ray.workers", f"no {path} yet: a run that is not in check mode deploys Ray")
        elif module.params["expected"]:
            record = failed(
                "ray.workers",
                f"the inventory enables Ray (ray_enabled) but the head holds no {path}: run --tags ray",
                code="RAY_NOT_DEPLOYED",
            )
        else:
            record = not_applicable("ray.workers", "no standing Ray cluster (ray_enabled is false)")
        exit_with_records(module, [record])
    with open(path, encoding="utf-8") as described:
        cluster = json.load(described)
    argv = [f"{cluster['env_dir']}/bin/ray", "list", "nodes", "--format", "json", "--limit", "10000"]
    rc, out, err = run_with_deadline([*argv, "--address", cluster["dashboard"]], timeout)
    if rc != 0:
        record = failed(
            "ray.workers",
            f"the head {cluster['head']} ({cluster['dashboard']}) did not list its nodes: {said(rc, out, err, 300)} "
            "(on the head: systemctl status gpulab-ray-head, journalctl -u gpulab-ray-head)",
            code="RAY_HEAD_DOWN",
        )
        exit_with_records(module, [record])
    try:
        alive = ray.alive_nodes(out)
    except ray.RayParseError as exc:
        module.fail_json(msg=str(exc))
    exit_with_records(module, ray.worker_records(alive, cluster))


if __name__ == "__main__":
    main()
