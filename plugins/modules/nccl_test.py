#!/usr/bin/python
"""Run nccl-tests, or judge saved output, and return gpulab check records."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_test
short_description: Run nccl-tests (or read its saved output) and judge correctness and bus bandwidth
description:
  - Runs one nccl-tests binary (C(all_reduce_perf), C(all_gather_perf), C(sendrecv_perf), ...) locally, or
    across hosts with C(mpirun) or C(srun), with the NCCL environment given; or evaluates output saved
    earlier (text or the C(-J) JSON file), for runs made through Slurm.
  - Parses every nccl-tests output generation, with mpirun/srun prefixes and NCCL INFO lines mixed in.
  - Returns check records C({check, status, value, threshold, unit, message, code}). Bandwidth is judged on
    the large-message rows (never on the sweep average) against I(expected_busbw) or a value derived from
    I(link_speed_gbps).
  - A missing nccl-tests binary is reported as C(unavailable), not as a fault, unless
    I(expected_installed) says the inventory expects it there, which makes it a failure.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  test:
    description: The nccl-tests binary to run.
    type: str
    default: all_reduce_perf
  tests_dir:
    description: Directory holding the nccl-tests binaries.
    type: path
    default: /opt/nccl-tests/build
  args:
    description: Arguments for the binary. The default measures 256 MiB to 1 GiB, one GPU per rank.
    type: list
    elements: str
    default: ['-b', '256M', '-e', '1G', '-f', '2', '-g', '1']
  launcher:
    description: How to start the ranks.
    type: str
    choices: [local, mpirun, srun]
    default: local
  hosts:
    description:
      - Hosts for C(mpirun) or C(srun), one entry per node. With C(srun), nodes Slurm cannot use now (drained,
        down) are left out and named in an C(nccl_nodes) record.
    type: list
    elements: str
    default: []
  srun_mpi:
    description: The C(srun --mpi) plugin that starts the MPI ranks (nccl-tests built with MPI=1).
    type: str
    default: pmix
  gpus_per_host:
    description: Ranks (one per GPU) started on each host.
    type: int
    default: 1
  env:
    description: NCCL environment for the run (for example C(NCCL_SOCKET_IFNAME), C(NCCL_IB_HCA), C(NCCL_ALGO)).
    type: dict
    default: {}
  output:
    description: Saved nccl-tests stdout (or JSON text) to evaluate instead of running anything.
    type: str
  output_path:
    description: A saved output file on the managed node (C(.json) files are read as the C(-J) JSON form).
    type: path
  rc:
    description: Exit code of the saved run, when known (with I(output) or I(output_path)).
    type: int
  expected_busbw:
    description: Expected bus bandwidth in GB/s for the large messages. Wins over I(link_speed_gbps).
    type: float
  link_speed_gbps:
    description: Line rate of the link between the nodes in Gb/s; expected busbw is line rate / 8 x 0.96.
    type: float
  pass_ratio:
    description: Fraction of the expected busbw that passes (0 < ratio <= 1).
    type: float
    default: 0.9
  min_size:
    description: Rows with at least this many bytes are judged for bandwidth (the largest size if none is).
    type: int
    default: 268435456
  expected_installed:
    description: The inventory expects nccl-tests on this node (the validation role's C(validation_nccl_tests)),
      so a missing binary is a failure, not C(unavailable).
    type: bool
    default: false
  rdma_expected:
    description:
      - Fail when NCCL used TCP sockets (the fabric declares RDMA). Seeing the transport needs
        C(NCCL_DEBUG=INFO) lines, so a run this module starts gets C(NCCL_DEBUG=INFO) unless I(env) sets
        C(NCCL_DEBUG); saved output without those lines leaves the transport C(unavailable).
    type: bool
    default: false
  timeout:
    description: Seconds before a run is considered hung.
    type: int
    default: 900
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
notes:
  - Two-node all_reduce can report more than the NIC carries unless C(NCCL_ALGO=Ring) is set.
"""

EXAMPLES = r"""
- name: All-reduce between the GPU nodes over the 100GbE fabric
  gpulab.cluster.nccl_test:
    launcher: mpirun
    hosts: "{{ groups['compute'] }}"
    gpus_per_host: 2
    env: {NCCL_ALGO: Ring, NCCL_DEBUG: INFO}
    link_speed_gbps: 100
    rdma_expected: true
  run_once: true

- name: Judge a run made earlier through Slurm
  gpulab.cluster.nccl_test:
    output_path: /shared/nccl/all_reduce.json
    expected_busbw: 11.5
"""

RETURN = r"""
status:
  description: Worst status among the checks (n/a, pass, unavailable, warn, fail).
  returned: always
  type: str
  sample: pass
summary:
  description: Number of checks per status.
  returned: always
  type: dict
  sample: {pass: 4, warn: 0, fail: 0, unavailable: 0}
checks:
  description: Check records.
  returned: always
  type: list
  elements: dict
  sample:
    - {check: nccl_busbw, status: pass, value: 11.69, threshold: 10.8, unit: GB/s,
       message: "busbw at 1073741824-1073741824 B 11.69 GB/s >= 10.8", code: null}
result:
  description: The parsed run (version, collective, ranks, hosts, rows with size and busbw, footer values).
  returned: when output was parsed
  type: dict
expected_busbw:
  description: The bus bandwidth in GB/s the large messages are held to before I(pass_ratio), for the report.
  returned: when expected_busbw or link_speed_gbps is given
  type: float
cmd:
  description: The command that was run.
  returned: when a run was made
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import AT_LEAST_1, POSITIVE, SHARE, start
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import (
    exit_with_records,
    failed,
    unavailable,
)
from ansible_collections.gpulab.cluster.plugins.module_utils.nccl_tests import (
    NcclParseError,
    build_command,
    evaluate,
    parse_json,
    parse_text,
)
from ansible_collections.gpulab.cluster.plugins.module_utils.plan import expected_busbw
from ansible_collections.gpulab.cluster.plugins.module_utils.slurm import usable_hosts


def _parse(text: str):
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return parse_json(json.loads(stripped))
    return parse_text(text)


ARGUMENT_SPEC = dict(
    test=dict(type="str", default="all_reduce_perf"),
    tests_dir=dict(type="path", default="/opt/nccl-tests/build"),
    args=dict(type="list", elements="str", default=["-b", "256M", "-e", "1G", "-f", "2", "-g", "1"]),
    launcher=dict(type="str", choices=["local", "mpirun", "srun"], default="local"),
    hosts=dict(type="list", elements="str", default=[]),
    srun_mpi=dict(type="str", default="pmix"),
    gpus_per_host=dict(type="int", default=1),
    env=dict(type="dict", default={}),
    output=dict(type="str"),
    output_path=dict(type="path"),
    rc=dict(type="int"),
    expected_busbw=dict(type="float"),
    link_speed_gbps=dict(type="float"),
    pass_ratio=dict(type="float", default=0.9, no_log=False),
    min_size=dict(type="int", default=268435456),
    rdma_expected=dict(type="bool", default=False),
    expected_installed=dict(type="bool", default=False),
    timeout=dict(type="int", default=900),
)


BOUNDS = {
    "expected_busbw": POSITIVE,
    "link_speed_gbps": POSITIVE,
    "pass_ratio": SHARE,
    "gpus_per_host": AT_LEAST_1,
    "timeout": AT_LEAST_1,  # timeout(1) takes 0 as no deadline at all
}


def input_problem(p: dict) -> str | None:
    """The first setting that cannot be used that BOUNDS cannot say, as a message naming it; None when all can."""
    if p["launcher"] != "local" and not p["hosts"] and p["output"] is None and p["output_path"] is None:
        return f"launcher={p['launcher']} needs hosts: the nodes to run on"
    return None


def given_output(module: AnsibleModule) -> str | None:
    """nccl-tests output the caller gave (output, or output_path on this node); None to run the test."""
    p = module.params
    if p["output"] is not None:
        return p["output"]
    if p["output_path"] is None:
        return None
    if not os.path.isfile(p["output_path"]):
        module.fail_json(msg=f"output_path {p['output_path']} does not exist on {os.uname().nodename}")
    with open(p["output_path"], encoding="utf-8", errors="replace") as handle:
        return handle.read()


def run_test(module: AnsibleModule, notes: list, extra: dict) -> tuple[int, str]:
    """Run nccl-tests as the parameters say; (rc, its output). A missing binary or too few nodes exit here."""
    p = module.params
    binary = os.path.join(p["tests_dir"], p["test"])
    if not os.access(binary, os.X_OK):
        judge = failed if p["expected_installed"] else unavailable
        record = judge(
            "nccl_run",
            f"nccl-tests binary {binary} not found or not executable; install nccl-tests (role nccl) or set tests_dir",
            code="NCCL_TESTS_MISSING",
        )
        exit_with_records(module, [record])
    env = {k: str(v) for k, v in p["env"].items()}
    if p["rdma_expected"]:
        env.setdefault("NCCL_DEBUG", "INFO")  # the transport line ("Using network IB") comes at INFO
    hosts = p["hosts"]
    if p["launcher"] == "srun":
        hosts, left = usable_hosts(module.run_command, hosts)
        if left:
            notes.append(unavailable("nccl_nodes", left))
        if len(hosts) < 2:
            exit_with_records(module, [*notes, unavailable("nccl_run", "fewer than two nodes left to run on")])
    cmd = build_command(
        p["test"], p["tests_dir"], p["args"], p["launcher"], hosts, p["gpus_per_host"], env, p["srun_mpi"]
    )
    run_env = env if p["launcher"] == "local" else {}
    rc, out, err = module.run_command(["timeout", str(p["timeout"]), *cmd], environ_update=run_env)
    text = out + ("\n" + err if err else "")
    extra["cmd"] = cmd
    if rc == 124:
        text += f"\nTest timeout ({p['timeout']}s) gpulab nccl_test\n"
    return rc, text


def main() -> None:
    module = start(
        ARGUMENT_SPEC,
        input_problem,
        BOUNDS,
        mutually_exclusive=[("output", "output_path"), ("expected_busbw", "link_speed_gbps")],
    )
    p = module.params
    expected = p["expected_busbw"]
    if expected is None and p["link_speed_gbps"] is not None:
        expected = expected_busbw(p["link_speed_gbps"])
    extra: dict = {"expected_busbw": round(expected, 3)} if expected else {}
    notes: list = []
    rc, text = p["rc"], given_output(module)
    if text is None:
        rc, text = run_test(module, notes, extra)
    try:
        parsed = _parse(text)
    except (NcclParseError, json.JSONDecodeError) as exc:
        module.fail_json(msg=f"could not parse nccl-tests output: {exc}", rc=rc, output_tail=text[-2000:], **extra)
    records = evaluate(
        parsed,
        rc=rc,
        expected=expected,
        pass_ratio=p["pass_ratio"],
        min_size=p["min_size"],
        rdma_expected=p["rdma_expected"],
    )
    exit_with_records(module, [*notes, *records], result=parsed.as_dict(), **extra)


if __name__ == "__main__":
    main()
