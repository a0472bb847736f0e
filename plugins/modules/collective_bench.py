#!/usr/bin/python
"""Run the torch.distributed all-reduce and DDP benchmark across nodes and return gpulab check records."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: collective_bench
short_description: Run a torch.distributed all-reduce sweep and a DDP step benchmark, and judge scaling efficiency
description:
  - With I(launcher=torchrun), starts C(torchrun) with a static rendezvous on this node as node I(node_rank) of
    I(nnodes); run it on every node at the same time (one task across the hosts), the first node being
    I(master_addr).
  - With I(launcher=srun), run it on one node only; one C(srun) job step starts C(torchrun) on every node of
    I(hosts) (a c10d rendezvous on the first of them that Slurm can use), the way users run training. Nodes
    Slurm cannot use now (drained, down) are left out and named in a C(collective.nodes) record.
  - The worker (installed by the C(validation) role) uses NCCL on GPUs and gloo on CPU. It measures all-reduce
    time and bus bandwidth for each size (up to 1 GiB on GPUs), then sizes the work to the device - the batch
    doubles until one worker's step takes I(min_step_ms) - and measures the step on one worker (T1), with
    DistributedDataParallel on N workers sharing that batch (TN, strong scaling) and on N workers with that
    batch each (TW, weak scaling). The GPU model (8 x 4096) has a 537 MB gradient, enough to load a link.
  - Strong scaling, T1 / (N x TN), is judged as the handbook does - above I(efficiency_healthy) passes, down to
    I(efficiency_acceptable) warns (look at the network), below fails (look at I/O and synchronisation). Weak
    scaling, T1 / TW, is reported, not judged.
  - Bus bandwidth is held to I(min_busbw_gbs), else, for NCCL across nodes, to the bandwidth I(link_speed_gbps)
    carries x I(pass_ratio).
  - Only node rank 0 returns the measurements and records; the others return C(role=worker).
  - A missing benchmark environment (no torch) is reported as C(unavailable), not as a fault.
  - With I(launcher=srun), a run whose first failing worker was ended by a signal (an abort, a kill) is run once
    more; the first failure stays in the report as a C(collective.retried) warning with what the worker said.
    A worker that raised an error, or a run past I(timeout), is not run again.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  launcher:
    description: C(torchrun) on every node (run the task on all of them), or one C(srun) from this node.
    type: str
    choices: [torchrun, srun]
    default: torchrun
  hosts:
    description: With I(launcher=srun), the Slurm node names to run on.
    type: list
    elements: str
    default: []
  gres:
    description: With I(launcher=srun), the generic resources each node's task asks for, such as C(gpu:2).
    type: str
  addresses:
    description:
      - With I(launcher=srun), each host's address on the network to meet on; the rendezvous is on the first
        host Slurm can use (its name when it has no entry here).
    type: dict
    default: {}
  nnodes:
    description: Number of nodes taking part.
    type: int
    default: 1
  node_rank:
    description: This node's rank, 0 to I(nnodes) - 1; rank 0 hosts the rendezvous and reports.
    type: int
    default: 0
  master_addr:
    description: With I(launcher=torchrun), the address of the node with rank 0, reachable from every node.
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
    description: Python interpreter with torch installed (the training environment's).
    type: path
    default: /opt/gpulab/train/bin/python
  script:
    description: The benchmark worker.
    type: path
    default: /opt/gpulab/bench/collective_bench.py
  sizes:
    description: All-reduce message sizes in bytes; empty chooses by device (4 KiB to 1 GiB on GPUs, to 16 MiB on CPU).
    type: list
    elements: int
    default: []
  steps:
    description: Timed training steps for T1 and TN.
    type: int
    default: 10
  global_batch:
    description: The batch calibration starts from; it doubles until one worker's step takes I(min_step_ms).
    type: int
    default: 256
  max_batch:
    description: The largest batch calibration tries (memory bounds it on GPUs).
    type: int
    default: 16384
  min_step_ms:
    description: One worker's step must take at least this long, so the step is compute-bound, not launch-bound.
    type: float
    default: 50
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
    description: Minimum all-reduce bus bandwidth in GB/s at the largest size. Wins over I(link_speed_gbps).
    type: float
  link_speed_gbps:
    description:
      - Line rate between the nodes in Gb/s. For NCCL across nodes, the bus bandwidth must reach what the link
        carries (line rate / 8 x 0.96) x I(pass_ratio). gloo on CPU is reported, not judged.
    type: float
  pass_ratio:
    description: Fraction of the expected bus bandwidth that passes (0 < ratio <= 1).
    type: float
    default: 0.9
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
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

- name: The same, as a Slurm job step started from the first compute node
  gpulab.cluster.collective_bench:
    launcher: srun
    hosts: "{{ groups['compute'] }}"
    gres: gpu:2
    nproc_per_node: 2
    addresses: {gpu1: 10.0.20.11, gpu2: 10.0.20.12}
    link_speed_gbps: 100
  when: inventory_hostname == groups['compute'][0]
"""

RETURN = r"""
role:
  description: C(reporter) on node rank 0, C(worker) elsewhere.
  returned: always
  type: str
checks:
  description: Records C(collective.nodes) (srun, when nodes were left out), C(collective.retried) (srun, when the
    first run was ended by a signal), C(collective.run), C(collective.busbw), C(collective.step_time),
    C(scaling_weak), C(scaling_efficiency) (rank 0 only).
  returned: always
  type: list
  elements: dict
status:
  description: Worst status among the checks.
  returned: always
  type: str
result:
  description: The worker's measurements - backend, device, world_size, hosts, slurm_job_id, allreduce rows (bytes,
    time_us, algbw_gbs, busbw_gbs) and ddp (step_time_1_ms, step_time_n_ms, step_time_weak_ms, workers,
    global_batch, batch_per_worker, min_step_ms, width, depth, parameters, gradient_bytes).
  returned: on rank 0 when the run finished
  type: dict
efficiency:
  description: T1 / (N x TN), strong scaling.
  returned: on rank 0 when the run finished
  type: float
expected_busbw:
  description: The bus bandwidth in GB/s that I(link_speed_gbps) carries, for the report's chart.
  returned: when link_speed_gbps is given
  type: float
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import collective as cb
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import (
    AT_LEAST_1,
    NOT_NEGATIVE,
    POSITIVE,
    SHARE,
    start,
)
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import (
    exit_with_records,
    failed,
    unavailable,
    warned,
)
from ansible_collections.gpulab.cluster.plugins.module_utils.plan import expected_busbw
from ansible_collections.gpulab.cluster.plugins.module_utils.slurm import usable_hosts

ARGUMENT_SPEC = dict(
    launcher=dict(type="str", choices=["torchrun", "srun"], default="torchrun"),
    hosts=dict(type="list", elements="str", default=[]),
    gres=dict(type="str"),
    addresses=dict(type="dict", default={}),
    nnodes=dict(type="int", default=1),
    node_rank=dict(type="int", default=0),
    master_addr=dict(type="str", default="127.0.0.1"),
    master_port=dict(type="int", default=29500),
    nproc_per_node=dict(type="int", default=1),
    python=dict(type="path", default="/opt/gpulab/train/bin/python"),
    script=dict(type="path", default="/opt/gpulab/bench/collective_bench.py"),
    sizes=dict(type="list", elements="int", default=[]),
    steps=dict(type="int", default=10),
    global_batch=dict(type="int", default=256),
    max_batch=dict(type="int", default=16384),
    min_step_ms=dict(type="float", default=50.0),
    threads=dict(type="int", default=0),
    env=dict(type="dict", default={}),
    timeout=dict(type="int", default=600),
    efficiency_healthy=dict(type="float", default=0.9),
    efficiency_acceptable=dict(type="float", default=0.7),
    min_busbw_gbs=dict(type="float"),
    link_speed_gbps=dict(type="float"),
    pass_ratio=dict(type="float", default=0.9, no_log=False),
)


BOUNDS = {
    "nnodes": AT_LEAST_1,
    "nproc_per_node": AT_LEAST_1,
    "steps": AT_LEAST_1,
    "global_batch": AT_LEAST_1,
    "timeout": AT_LEAST_1,
    "threads": NOT_NEGATIVE,
    "min_busbw_gbs": POSITIVE,
    "link_speed_gbps": POSITIVE,
    "min_step_ms": POSITIVE,
    "pass_ratio": SHARE,
}


def input_problem(p: dict) -> str | None:
    """The first setting that cannot be run that BOUNDS cannot say, as a message naming it; None when all can."""
    if p["max_batch"] < p["global_batch"]:
        return f"max_batch must be at least global_batch ({p['global_batch']}), got {p['max_batch']}"
    if p["launcher"] == "srun" and not p["hosts"]:
        return "launcher=srun needs hosts: the Slurm nodes to run on"
    if not 0 <= p["node_rank"] < p["nnodes"]:
        return f"node_rank must be 0 to nnodes - 1 ({p['nnodes'] - 1}), got {p['node_rank']}"
    if p["sizes"] and min(p["sizes"]) < 4:
        return f"sizes must be message sizes of at least 4 bytes, got {p['sizes']}"
    if not 0 < p["efficiency_acceptable"] <= p["efficiency_healthy"] <= 1:
        return (
            "efficiency thresholds must satisfy 0 < efficiency_acceptable <= efficiency_healthy <= 1, got "
            f"{p['efficiency_acceptable']} and {p['efficiency_healthy']}"
        )
    return None


def worker_args(p: dict) -> list[str]:
    return [
        f"--steps={p['steps']}",
        f"--global-batch={p['global_batch']}",
        f"--max-batch={p['max_batch']}",
        f"--min-step-ms={p['min_step_ms']:g}",
        f"--threads={p['threads']}",
        *([f"--sizes={','.join(str(s) for s in p['sizes'])}"] if p["sizes"] else []),
    ]


def launch(module: AnsibleModule, role: str) -> tuple[list[str], tuple[str, int], list]:
    """The command that starts the benchmark, its rendezvous (address, port), and notes on nodes left out.
    With srun, a run with no node left to run on exits here."""
    p, notes = module.params, []
    if p["launcher"] != "srun":
        command = cb.build_command(
            p["python"], p["script"], p["nnodes"], p["node_rank"], p["nproc_per_node"], p["master_addr"],
            p["master_port"], worker_args(p),
        )  # fmt: skip
        return command, (p["master_addr"], p["master_port"]), notes
    hosts, left = usable_hosts(module.run_command, p["hosts"])
    if left:
        notes.append(unavailable("collective.nodes", left))
    if not hosts:
        exit_with_records(module, [*notes, unavailable("collective.run", "no node left to run on")], role=role)
    rendezvous = (str(p["addresses"].get(hosts[0], hosts[0])), p["master_port"])
    command = cb.build_srun_command(
        p["python"], p["script"], hosts, p["nproc_per_node"], *rendezvous, worker_args(p), p["gres"]
    )
    return command, rendezvous, notes


def run_failure(p: dict, rc: int, output: str, command: list[str], rendezvous: tuple[str, int]):
    """The record of a benchmark run that exited rc (not 0)."""
    if "No module named 'torch'" in output[-3000:]:
        return unavailable(
            "collective.run",
            f"torch is not installed for {p['python']} (pytorch in training_frameworks installs it)",
            code="BENCH_MISSING",
        )
    if rc == 124:
        return failed(
            "collective.run",
            f"the benchmark did not finish in {p['timeout']} s: a node did not join the rendezvous at "
            f"{rendezvous[0]}:{rendezvous[1]} (firewall, wrong address), Slurm did not start the job "
            "(nodes busy), or a collective hung",
            code="BENCH_TIMEOUT",
        )
    return failed("collective.run", f"{command[0]} exited {rc}: {cb.failure_summary(output)}", code="BENCH_FAILED")


def main() -> None:
    module = start(ARGUMENT_SPEC, input_problem, BOUNDS)
    p = module.params
    role = "reporter" if p["node_rank"] == 0 else "worker"
    expected = expected_busbw(p["link_speed_gbps"]) if p["link_speed_gbps"] else None
    extra = {"expected_busbw": round(expected, 3)} if expected else {}

    missing = [path for path in (p["python"], p["script"]) if not os.path.exists(path)]
    if missing:
        record = unavailable(
            "collective.run",
            f"{' and '.join(missing)} not found on {os.uname().nodename}: the training role installs torch "
            "(pytorch in training_frameworks), the validation role the worker (validation_collective_bench: true)",
            code="BENCH_MISSING",
        )
        exit_with_records(module, [record], role=role, **extra)

    cmd, rendezvous, notes = launch(module, role)
    env = {k: str(v) for k, v in p["env"].items()}
    if p["threads"]:
        env.setdefault("OMP_NUM_THREADS", str(p["threads"]))
    rc, out, err = module.run_command(["timeout", str(p["timeout"]), *cmd], environ_update=env)
    if rc not in (0, 124) and p["launcher"] == "srun" and cb.ended_by_signal(out + err):
        # One srun controls every node, so the whole run can start again; torchrun on each node cannot.
        notes.append(
            warned(
                "collective.retried",
                f"the first run failed and was run again: {cb.failure_summary(out + err)}",
                code="BENCH_RETRIED",
            )
        )
        rc, out, err = module.run_command(["timeout", str(p["timeout"]), *cmd], environ_update=env)
    tail = (out + err)[-3000:]
    if rc != 0:
        record = run_failure(p, rc, out + err, cmd, rendezvous)
        exit_with_records(module, [*notes, record], role=role, cmd=cmd, output_tail=tail, **extra)
    if role == "worker":
        exit_with_records(module, [], role=role, cmd=cmd)  # rank 0 reports for everyone
    try:
        result = cb.parse_output(out)
    except cb.BenchParseError as exc:
        module.fail_json(msg=f"{cmd[0]} exited 0, but {exc}", cmd=cmd, output_tail=tail)
    ddp = result["ddp"]
    records = cb.evaluate(
        result, p["efficiency_healthy"], p["efficiency_acceptable"], p["min_busbw_gbs"], expected, p["pass_ratio"]
    )
    value = cb.efficiency(float(ddp["step_time_1_ms"]), float(ddp["step_time_n_ms"]), int(ddp["workers"]))
    exit_with_records(module, [*notes, *records], role=role, cmd=cmd, result=result, efficiency=value, **extra)


if __name__ == "__main__":
    main()
