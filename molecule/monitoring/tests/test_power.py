"""GPU power limits (nvidia_driver_power_limits) on mon-gpu1, whose nvidia-smi and NVML are the
stand-ins sharing one JSON file: a limit outside a GPU's range is refused with nothing set; limits
in range are set, reach Prometheus through the GPU collector, are set again by the boot unit after
the driver forgot them, and a rerun changes nothing."""

import json
import os
import shlex
from pathlib import Path

import pytest
from polling import wait_for

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
PLAYBOOK = "molecule/monitoring/power.yml"
UNIT = "/etc/systemd/system/gpulab-gpu-power.service"


def limits_arg(limits):
    return json.dumps({"nvidia_driver_power_limits": limits})


@pytest.fixture(scope="module")
def gpu1(stand_in, ansible_playbook):
    """mon-gpu1 with the nvidia-smi stand-in at /usr/bin/nvidia-smi, on the pynvml stand-in's file."""
    host, _edit = stand_in
    code = (ROOT / "tests/stand_ins/nvidia_smi.py").read_text()
    wrapper = '#!/bin/sh\nGPULAB_NVML_STAND_IN=/root/nvml.json exec python3 /root/nvidia_smi.py "$@"\n'
    host.check_output(
        f"printf %s {shlex.quote(code)} > /root/nvidia_smi.py && printf %s {shlex.quote(wrapper)} > /usr/bin/nvidia-smi"
        " && chmod 755 /usr/bin/nvidia-smi"
    )
    yield host
    gone = ansible_playbook(PLAYBOOK, "--limit", "mon-gpu1", "-e", limits_arg({}))
    host.check_output("rm -f /usr/bin/nvidia-smi /root/nvidia_smi.py")
    assert gone.returncode == 0, gone.stdout[-3000:]
    assert not host.file(UNIT).exists


def limits_mw(host):
    return [gpu["limit_mw"] for gpu in json.loads(host.file("/root/nvml.json").content_string)["gpus"]]


def prometheus_limits(prometheus):
    """mon-gpu1's power limits as Prometheus has them: {gpu: watts}."""
    expr = 'gpulab_gpu_power_limit_watts{instance="mon-gpu1"}'
    return {r["metric"]["gpu"]: r["value"][1] for r in prometheus(expr)[expr]}


def test_a_limit_a_gpu_does_not_allow_is_refused_and_nothing_is_set(gpu1, ansible_playbook):
    run = ansible_playbook(PLAYBOOK, "--limit", "mon-gpu1", "-e", limits_arg({"all": 300}))
    assert run.returncode != 0
    # The GeForce allows 300 W, the A100 does not: neither is set.
    assert "nvidia_driver_power_limits[all]: 300 W is outside what GPU 1 allows (150 to 250 W)" in run.stdout
    assert limits_mw(gpu1) == [450000, 250000]
    assert not gpu1.file(UNIT).exists


def test_limits_are_set_and_reach_prometheus(gpu1, ansible_playbook, prometheus):
    check = ansible_playbook(
        PLAYBOOK, "--limit", "mon-gpu1", "--check", "--diff", "-e", limits_arg({"all": 200, "0": 350})
    )
    assert check.returncode == 0, check.stdout[-3000:]
    assert "-GPU 0: 450.0 W" in check.stdout and "+GPU 1: 200 W" in check.stdout, check.stdout[-3000:]
    assert limits_mw(gpu1) == [450000, 250000]  # check mode sets nothing
    run = ansible_playbook(PLAYBOOK, "--limit", "mon-gpu1", "--diff", "-e", limits_arg({"all": 200, "0": 350}))
    assert run.returncode == 0, run.stdout[-3000:]
    assert "+GPU 0: 350 W" in run.stdout and "+GPU 1: 200 W" in run.stdout
    assert limits_mw(gpu1) == [350000, 200000]
    unit = gpu1.file(UNIT).content_string
    # By UUID, so a reboot that numbers the GPUs in another order still caps the right one.
    assert (
        "ExecStart=/usr/bin/nvidia-smi -i GPU-5f3b1a9e-2c44-8d1e-7f0a-1b2c3d4e5f60 -pl 350\n"
        "# GPU 1 when this was written\n"
        "ExecStart=/usr/bin/nvidia-smi -i GPU-8a7c6b5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d -pl 200\n"
    ) in unit
    assert gpu1.service("gpulab-gpu-power.service").is_enabled
    # The collector reads the new limits through NVML; Prometheus scrapes them.
    wanted = {"0": "350", "1": "200"}
    assert wait_for(lambda: prometheus_limits(prometheus) == wanted, 30), prometheus_limits(prometheus)


def test_a_rerun_changes_nothing(gpu1, ansible_playbook):
    run = ansible_playbook(PLAYBOOK, "--limit", "mon-gpu1", "-e", limits_arg({"all": 200, "0": 350}))
    assert run.returncode == 0 and "changed=0" in run.stdout, run.stdout[-3000:]


def test_the_boot_unit_sets_them_again_after_the_driver_forgot_them(gpu1):
    # A driver reload (a reboot) puts every GPU back at its default limit.
    gpu1.check_output(
        "python3 -c \"import json; p='/root/nvml.json'; s=json.load(open(p));"
        " [g.update(limit_mw=g['limit_default_mw']) for g in s['gpus']]; json.dump(s, open(p, 'w'))\""
    )
    assert limits_mw(gpu1) == [450000, 250000]
    gpu1.check_output("systemctl restart gpulab-gpu-power.service")
    assert limits_mw(gpu1) == [350000, 200000]
