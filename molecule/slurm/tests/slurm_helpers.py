"""What the Slurm scenario's test files share: waiting, node state, and GPU stand-ins."""

import shlex
import time
from pathlib import Path

SCENARIO = Path(__file__).resolve().parents[1]
ROOT = SCENARIO.parents[1]


def as_user(ctl, user, command, check=True):
    cmd = f"runuser -u {user} -- {command}"
    return ctl.check_output(cmd) if check else ctl.run(cmd)


def wait_for(predicate, seconds, step=2):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def node_state(ctl, name):
    """(State, Reason) of a node; Reason is last on scontrol's line and may hold spaces."""
    line = ctl.check_output(f"scontrol -o show node {name}")
    state = line.split(" State=", 1)[1].split(" ", 1)[0]
    reason = line.split(" Reason=", 1)[1] if " Reason=" in line else ""
    return state, reason


FAKE_SMI = r"""#!/bin/bash
# Test stand-in: nvidia-smi -L lists both GPUs (the node check is content); the health query answers
# with the GPUs in /usr/local/share/gpulab-query.csv, the version query with their driver, the memory query
# with those GPUs idle (no process).
case "$*" in
  -L) printf 'GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-1)\nGPU 1: NVIDIA GeForce RTX 4090 (UUID: GPU-2)\n' ;;
  *--query-gpu=driver_version*) cut -d, -f5 /usr/local/share/gpulab-query.csv | tr -d ' ' ;;
  *--query-gpu=pci.bus_id,memory*) cut -d, -f4 /usr/local/share/gpulab-query.csv | sed 's/$/, 0, 24564/' ;;
  *--query-compute-apps=*) ;;
  *--query-gpu=*) cat /usr/local/share/gpulab-query.csv ;;
esac
"""
# Two healthy GeForce GPUs as nvidia-smi reports them (no ECC: n/a, which passes).
TWO_GPUS = (ROOT / "tests/unit/fixtures/nvidia_smi/query_rtx4090_550.csv").read_text()


def fake_gpus(host, csv):
    """Give a compute node (declared with 2 GPUs) a stand-in nvidia-smi that reports the GPUs of csv."""
    host.check_output(f"printf %s {shlex.quote(csv)} > /usr/local/share/gpulab-query.csv")
    # Into place in one rename: the node check must never see a half-written nvidia-smi.
    tmp = "/usr/local/bin/.nvidia-smi.new"
    host.check_output(
        f"printf %s {shlex.quote(FAKE_SMI)} > {tmp} && chmod 755 {tmp} && mv {tmp} /usr/local/bin/nvidia-smi"
    )
