"""A driver pin moved through upgrade.yml (--tags nvidia_driver) on one compute node: the real Debian
packages, held, moved behind a drain and a health gate; a rerun with the pin met drains nothing.

Runs after test_upgrade.py. slurm-gpu1 gets Debian's 535 driver (userspace: a container runs its host's
kernel) at the newest version the archive offers, then upgrade.yml moves the pin to the oldest.
"""

import json
import re
import shlex
import threading

import pytest
from polling import wait_for
from slurm_helpers import SCENARIO, TWO_GPUS, node_state

GPU1 = "slurm-gpu1"
DRIVER = ["nvidia-smi", "libnvidia-ml1", "libcuda1"]  # Debian's 535 flavour in a container
STAND_IN_CSV = "/usr/local/share/gpulab-query.csv"
# nvidia-smi stand-in that reports the driver of the installed nvidia-smi package (as a node rebooted into
# it would), placed before the real package arrives: /usr/local/bin comes first on PATH, and the real one
# cannot talk to a driver here, which the Slurm node check would take for lost GPUs.
STAND_IN = rf"""#!/bin/bash
driver=$(dpkg-query -W -f '${{Version}}' nvidia-smi 2>/dev/null | cut -d- -f1)
case "$*" in
  -L) printf 'GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-1)\nGPU 1: NVIDIA GeForce RTX 4090 (UUID: GPU-2)\n' ;;
  *--query-gpu=driver_version*) cut -d, -f5 {STAND_IN_CSV} | sed "s/.*/$driver/" ;;
  *--query-gpu=pci.bus_id,memory*) cut -d, -f4 {STAND_IN_CSV} | sed 's/$/, 0, 24564/' ;;
  *--query-compute-apps=*) ;;
  *--query-gpu=*) sed "s/550\.127\.05/$driver/" {STAND_IN_CSV} ;;
esac
"""


def installed(host, package):
    return host.check_output(f"dpkg-query -W -f '${{Version}}' {package}")


def upgrade(ansible_playbook, version, *args):
    extra = {"nvidia_driver_branch": "535", "nvidia_driver_version": version, "validation_nccl_tests": False}
    return ansible_playbook(
        "playbooks/upgrade.yml", "--tags", "nvidia_driver", "--limit", GPU1, *args, "-e", json.dumps(extra),
        inventories=(SCENARIO / "add-node.yml",), timeout=900,
    )  # fmt: skip


@pytest.fixture(scope="module")
def versions(ansible_playbook, node):
    """(newest, oldest) 535 releases; gpu1 runs the newest, installed by site's GPU stack play."""
    gpu1 = node(GPU1)
    gpu1.check_output(f"printf %s {shlex.quote(TWO_GPUS)} > {STAND_IN_CSV}")
    smi = "/usr/local/bin/nvidia-smi"
    gpu1.check_output(f"printf %s {shlex.quote(STAND_IN)} > {smi} && chmod 755 {smi}")
    run = ansible_playbook(
        "playbooks/gpu_stack.yml", "--tags", "nvidia_driver", "--limit", GPU1, "-e", "nvidia_driver_branch=535",
        inventories=(SCENARIO / "add-node.yml",), timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    madison = gpu1.check_output("apt-cache madison nvidia-smi")
    found = sorted(set(re.findall(r"\|\s*(535\.[0-9.]+)-", madison)), key=lambda v: [int(p) for p in v.split(".")])
    if len(found) < 2:
        pytest.skip(f"the mirror offers one 535 release only ({found})")
    assert installed(gpu1, "nvidia-smi").startswith(found[-1] + "-")
    yield found[-1], found[0]
    gpu1.check_output(f"rm -f /usr/local/bin/nvidia-smi {STAND_IN_CSV}")


def test_check_mode_names_the_pin_move_and_drains_nothing(ansible_playbook, ctl, node, versions):
    newest, oldest = versions
    run = upgrade(ansible_playbook, oldest, "--check")
    assert run.returncode == 0, run.stdout[-3000:]
    assert re.search(
        rf"{GPU1}: 0 package\(s\) to upgrade; 3 pin\(s\) to move \(nvidia-smi {re.escape(newest)}-\S+ -> "
        rf"nvidia_driver_branch 535 / nvidia_driver_version {re.escape(oldest)}, ",
        run.stdout,
    ), run.stdout[-3000:]
    assert node_state(ctl, GPU1) == ("IDLE", "")
    assert installed(node(GPU1), "nvidia-smi").startswith(newest + "-")


def test_pin_moves_behind_a_drain_and_the_node_comes_back(ansible_playbook, ctl, node, versions):
    _newest, oldest = versions
    gpu1 = node(GPU1)
    states, done = set(), threading.Event()

    def watch():
        while not done.is_set():
            states.add(ctl.check_output(f"sinfo -h -N -n {GPU1} -o %t").strip())
            done.wait(1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        run = upgrade(ansible_playbook, oldest)
    finally:
        done.set()
        watcher.join()
    assert run.returncode == 0, run.stdout[-3000:]
    assert "drain" in states, states  # drained (no job on it) while the pin moved
    for package in DRIVER:
        assert installed(gpu1, package).startswith(oldest + "-"), package
    assert set(DRIVER) <= set(gpu1.check_output("apt-mark showhold").split())
    assert gpu1.file("/etc/apt/preferences.d/gpulab-nvidia-driver").contains(f"^Pin: version {re.escape(oldest)}-\\*$")
    assert f"{GPU1}: no reboot needed: the node runs what is installed" in run.stdout
    assert wait_for(lambda: node_state(ctl, GPU1) == ("IDLE", ""), 200), node_state(ctl, GPU1)
    for other in ("slurm-gpu2", "slurm-gpu3"):
        assert node_state(ctl, other) == ("IDLE", "")
        assert not node(other).package("nvidia-smi").is_installed


def test_with_the_pin_met_a_rerun_drains_nothing_and_changes_nothing(ansible_playbook, ctl, versions):
    _newest, oldest = versions
    run = upgrade(ansible_playbook, oldest)
    assert run.returncode == 0, run.stdout[-3000:]
    assert f"{GPU1}: 0 package(s) to upgrade; no reboot needed" in run.stdout
    assert "nothing to do, not drained" in run.stdout
    assert re.search(rf"^{GPU1}\s+: ok=\d+\s+changed=0 ", run.stdout, re.M), run.stdout[-2000:]
    assert node_state(ctl, GPU1) == ("IDLE", "")
