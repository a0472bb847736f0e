#!/usr/bin/python
"""Run the torch.distributed all-reduce and DDP benchmark across nodes and return gpulab check records."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: collective_bench
short_description: Run a torch.distributed all-reduce sweep and a DDP step benchmark, and judge scaling efficiency
description:
  - Starts C(torchrun) with a static rendezvous on this node as node I(node_rank) of I(nnodes); run it on every
    node at the same time (one task across the hosts), the first node being I(master_addr).
  - The worker (installed by the C(validation) role) uses NCCL on GPUs and gloo on CPU. It measures all-reduce
    time and bus bandwidth for each size, then the step time of a small synthetic model trained on one worker
    (T1) and with DistributedDataParallel on all N workers (TN), with the same global batch.
  - Scaling efficiency is strong scaling, T1 / (N x TN), classified as the handbook does - above
    I(efficiency_healthy) passes, down to I(efficiency_acceptable) warns (look at the network), below fails
    (look at I/O and synchronisation).
  - Only node rank 0 returns the measurements and records; the others return C(role=worker).
  - A missing benchmark environment (no torch) is reported as C(unavailable), not as a fault.
version_added: 0.1.0
author: gpulab developers
options:
  nnodes:
    description: Number of nodes taking part.
    type: int
    default: 1
  node_rank:
    description: This node's rank, 0 to I(nnodes) - 1; rank 0 hosts the rendezvous and reports.
    type: int
    default: 0
  master_addr:
    description: Address of the node with rank 0, reachable from every node.
    type: str
    default: 127.0.0.1
  master_port:
    description: TCP port of the rendezvous on I(master_addr).
    type: int
    default: 29500
  nproc_per_node:
    description: Worker processes per node - the number of GPUs, or 1 on CPU.
    type: int
    default: 1
  python:
    description: Python interpreter with torch installed.
    type: path
    default: /opt/gpulab/bench/bin/python
  script:
    description: The benchmark worker.
    type: path
    default: /opt/gpulab/bench/collective_bench.py
  sizes:
    description: All-reduce message sizes in bytes.
    type: list
    elements: int
    default: [4096, 65536, 1048576, 16777216]
  steps:
    description: Timed training steps for T1 and TN.
    type: int
    default: 10
  global_batch:
    description: Samples per step in total (split across the workers).
    type: int
    default: 256
  threads:
    description: CPU threads per worker; 0 keeps torch's default. Set 1 on shared CPUs for comparable numbers.
    type: int
    default: 0
  env:
    description: Extra environment for the workers (C(NCCL_SOCKET_IFNAME), C(GLOO_SOCKET_IFNAME), C(NCCL_DEBUG)).
    type: dict
    default: {}
  timeout:
    description: Seconds before the run is stopped.
    type: int
    default: 600
  efficiency_healthy:
    description: Scaling efficiency at or above which the cluster is healthy.
    type: float
    default: 0.9
  efficiency_acceptable:
    description: Scaling efficiency below which the check fails (between the two it warns).
    type: float
    default: 0.7
  min_busbw_gbs:
    description: Minimum all-reduce bus bandwidth in GB/s at the largest size; reported but not judged when unset.
    type: float
extends_documentation_fragment:
  - gpulab.cluster.checks
"""

EXAMPLES = r"""
- name: All-reduce and DDP scaling across the compute nodes
  gpulab.cluster.collective_bench:
    nnodes: "{{ groups['compute'] | length }}"
    node_rank: "{{ groups['compute'].index(inventory_hostname) }}"
    master_addr: "{{ hostvars[groups['compute'][0]]['gpulab_address'] }}"
    nproc_per_node: "{{ gpulab_gpu_count }}"
    env:
      NCCL_SOCKET_IFNAME: eth1
  register: bench
"""

RETURN = r"""
role:
  description: C(reporter) on node rank 0, C(worker) elsewhere.
  returned: always
  type: str
checks:
  description: Records C(collective.run), C(collective.busbw), C(scaling_efficiency) (rank 0 only).
  returned: always
  type: list
  elements: dict
status:
  description: Worst status among the checks.
  returned: always
  type: str
result:
  description: The worker's measurements - backend, world_size, hosts, allreduce rows (bytes, time_us, algbw_gbs,
    busbw_gbs) and ddp (step_time_1_ms, step_time_n_ms, workers, global_batch, scaling).
  returned: on rank 0 when the run finished
  type: dict
efficiency:
  description: T1 / (N x TN), strong scaling.
  returned: on rank 0 when the run finished
  type: float
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import collective as cb
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import exit_with_records, failed, unavailable


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            nnodes=dict(type="int", default=1),
            node_rank=dict(type="int", default=0),
            master_addr=dict(type="str", default="127.0.0.1"),
            master_port=dict(type="int", default=29500),
            nproc_per_node=dict(type="int", default=1),
            python=dict(type="path", default="/opt/gpulab/bench/bin/python"),
            script=dict(type="path", default="/opt/gpulab/bench/collective_bench.py"),
            sizes=dict(type="list", elements="int", default=[4096, 65536, 1048576, 16777216]),
            steps=dict(type="int", default=10),
            global_batch=dict(type="int", default=256),
            threads=dict(type="int", default=0),
            env=dict(type="dict", default={}),
            timeout=dict(type="int", default=600),
            efficiency_healthy=dict(type="float", default=0.9),
            efficiency_acceptable=dict(type="float", default=0.7),
            min_busbw_gbs=dict(type="float"),
            fail_on=dict(type="str", choices=["fail", "warn", "never"], default="fail"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for name in ("nnodes", "nproc_per_node", "steps", "global_batch", "timeout"):
        if p[name] < 1:
            module.fail_json(msg=f"{name} must be at least 1, got {p[name]}")
    if not 0 <= p["node_rank"] < p["nnodes"]:
        module.fail_json(msg=f"node_rank must be 0 to nnodes - 1 ({p['nnodes'] - 1}), got {p['node_rank']}")
    if p["threads"] < 0:
        module.fail_json(msg=f"threads must be 0 or more, got {p['threads']}")
    if not p["sizes"] or min(p["sizes"]) < 4:
        module.fail_json(msg=f"sizes must list message sizes of at least 4 bytes, got {p['sizes']}")
    if not 0 < p["efficiency_acceptable"] <= p["efficiency_healthy"] <= 1:
        module.fail_json(
            msg="efficiency thresholds must satisfy 0 < efficiency_acceptable <= efficiency_healthy <= 1, got "
            f"{p['efficiency_acceptable']} and {p['efficiency_healthy']}"
        )
    if p["min_busbw_gbs"] is not None and p["min_busbw_gbs"] <= 0:
        module.fail_json(msg=f"min_busbw_gbs must be greater than 0, got {p['min_busbw_gbs']}")
    role = "reporter" if p["node_rank"] == 0 else "worker"

    missing = [path for path in (p["python"], p["script"]) if not os.path.exists(path)]
    if missing:
        record = unavailable(
            "collective.run",
            f"{' and '.join(missing)} not found on {os.uname().nodename}: the validation role installs the "
            "benchmark (validation_collective_bench: true)",
            code="BENCH_MISSING",
        )
        exit_with_records(module, [record], role=role)

    output = os.path.join(module.tmpdir, "collective_bench.json")
    worker_args = [
        f"--sizes={','.join(str(s) for s in p['sizes'])}",
        f"--steps={p['steps']}",
        f"--global-batch={p['global_batch']}",
        f"--threads={p['threads']}",
    ]
    cmd = cb.build_command(
        p["python"],
        p["script"],
        p["nnodes"],
        p["node_rank"],
        p["nproc_per_node"],
        p["master_addr"],
        p["master_port"],
        output,
        worker_args,
    )
    env = {k: str(v) for k, v in p["env"].items()}
    if p["threads"]:
        env.setdefault("OMP_NUM_THREADS", str(p["threads"]))
    rc, out, err = module.run_command(["timeout", str(p["timeout"]), *cmd], environ_update=env)
    tail = (out + err)[-3000:]
    if rc != 0:
        if "No module named 'torch'" in tail:
            record = unavailable("collective.run", f"torch is not installed for {p['python']}", code="BENCH_MISSING")
        elif rc == 124:
            record = failed(
                "collective.run",
                f"the benchmark did not finish in {p['timeout']} s: a node did not join the rendezvous at "
                f"{p['master_addr']}:{p['master_port']} (firewall, wrong address) or a collective hung",
                code="BENCH_TIMEOUT",
            )
        else:
            record = failed("collective.run", f"torchrun exited {rc}: {tail[-600:].strip()}", code="BENCH_FAILED")
        exit_with_records(module, [record], role=role, cmd=cmd, output_tail=tail)
    if role == "worker":
        exit_with_records(module, [], role=role, cmd=cmd)  # rank 0 reports for everyone
    try:
        with open(output, encoding="utf-8") as handle:
            result = cb.parse_result(handle.read())
    except OSError as exc:
        module.fail_json(msg=f"torchrun exited 0 but wrote no result ({exc})", cmd=cmd, output_tail=tail)
    except cb.BenchParseError as exc:
        module.fail_json(msg=str(exc), cmd=cmd, output_tail=tail)
    ddp = result["ddp"]
    records = cb.evaluate(result, p["efficiency_healthy"], p["efficiency_acceptable"], p["min_busbw_gbs"])
    value = cb.efficiency(float(ddp["step_time_1_ms"]), float(ddp["step_time_n_ms"]), int(ddp["workers"]))
    exit_with_records(module, records, role=role, cmd=cmd, result=result, efficiency=value)


if __name__ == "__main__":
    main()
