"""The lab's UPS (NUT's dummy-ups on mgmt1, every node watching it): on battery the compute nodes are
drained in Slurm and an administrator's drain is left alone; power back resumes them; low battery
shuts the nodes down in tiers: gpu1 and gpu2 first, storage1 once they are gone, mgmt1, the UPS host,
last. In containers the shutdown command leaves a marker (/run/gpulab-ups-shutdown); its time stamps
give the order, and the test then makes the node stop answering ping, as a node that powered off."""

import json
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from helpers import on, query, validate, wait_for

STAND_INS = Path(__file__).resolve().parents[1] / "stand_ins"

UPS_FILE = "/etc/nut/gpulab-ups.dev"
MARKER = "/run/gpulab-ups-shutdown"
NODES = ("mgmt1", "storage1", "gpu1", "gpu2")
OTHERS = ("storage1", "gpu1", "gpu2")
COMPUTE = ("gpu1", "gpu2")


def answer_ping(node, answer):
    """Make a node's network stack answer ping or ignore it (in its network namespace, from this machine)."""
    pid = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Pid}}", node], check=True, capture_output=True, text=True
    ).stdout.strip()
    setting = f"net.ipv4.icmp_echo_ignore_all={0 if answer else 1}"
    subprocess.run(["nsenter", "-t", pid, "-n", "sysctl", "-q", "-w", setting], check=True, timeout=30)


def simulate(status, charge):
    """Put the simulated UPS in a state; dummy-ups reads the file again when it changes."""
    on("mgmt1", f"printf 'ups.status: {status}\\nbattery.charge: {charge}\\nbattery.runtime: 600\\n' > {UPS_FILE}")


def reason(node):
    line = on("mgmt1", f"scontrol -o show node {node}")
    found = re.search(r" Reason=(.*?)( \[[^]]*\])?$", line)
    return found.group(1) if found else ""


@pytest.fixture
def lab_ups():
    """After each test: the UPS on line, upsmon running again everywhere, no marker left, no UPS drain."""
    yield
    for node in NODES:
        answer_ping(node, True)
    simulate("OL", 100)
    # upsd keeps a forced shutdown (FSD) until the driver and upsd start again, as after a power cycle. Both
    # stop first: a NUT 2.8.0 driver that outlives an upsd spins on its closed connection (orphaned_sockets).
    on("mgmt1", "systemctl stop nut-server nut-driver@ups && systemctl start nut-driver@ups nut-server")
    assert wait_for(lambda: on("mgmt1", "upsc ups@127.0.0.1 ups.status 2>/dev/null") == "OL", 30)
    for node in NODES:
        on(node, f"rm -f {MARKER} /etc/killpower && systemctl restart nut-monitor")
    on("mgmt1", "/usr/local/sbin/gpulab-ups-drain resume")
    assert orphaned_sockets() == []


def orphaned_sockets():
    """The driver's connections whose client is gone: NUT 2.8.0's drivers never close them and spin on
    them at most of a core (networkupstools/nut#2484), as after upsd restarts while the driver runs on."""
    lines = on("mgmt1", "ss -x").splitlines()
    return [line for line in lines if "dummy-ups-ups" in line and re.search(r"\* 0\b", line)]


def test_the_simulated_ups_is_on_line_and_every_node_watches_it(lab_ups):
    # site.yml restarted upsd when it wrote its files, and the driver after it: no connection left behind.
    assert orphaned_sockets() == []
    assert on("mgmt1", "upsc ups@127.0.0.1 ups.status") == "OL"
    # Each node reads the UPS through upsd on mgmt1's management address, with its own login.
    for node in OTHERS:
        assert on(node, "upsc ups@mgmt1 ups.status") == "OL"
        assert on(node, "systemctl is-active nut-monitor") == "active"
    # upsd sees mgmt1's own upsmon on loopback and each other node's from its management address.
    addresses = {on("mgmt1", f"getent hosts {node}").split()[0] for node in OTHERS} | {"127.0.0.1"}
    assert wait_for(lambda: set(on("mgmt1", "upsc -c ups@127.0.0.1").split()) == addresses, 30), addresses


def test_on_battery_drains_the_compute_nodes_the_report_fails_and_power_back_resumes_them(lab_ups, tmp_path):
    assert reason("gpu1") == ""
    since = on("mgmt1", "date +%s.%N")
    on("mgmt1", "scontrol update nodename=gpu2 state=drain reason='lab: disk swap'")
    try:
        simulate("OB DISCHRG", 80)
        assert wait_for(lambda: reason("gpu1") == "gpulab: ups: on battery", 60), reason("gpu1")
        assert "DRAIN" in on("mgmt1", "scontrol -o show node gpu1")
        assert reason("gpu2") == "lab: disk swap"
        # The UPS collector -> node exporter -> Prometheus.
        on_battery = 'gpulab_ups_on_battery{instance="mgmt1",ups="ups"}'
        assert wait_for(lambda: [r["value"][1] for r in query(on_battery)[on_battery]] == ["1"], 60)
        # The report fails while the cluster runs on battery, and says so on the UPS host.
        run, report, _latest = validate(tmp_path / "on-battery")
        assert run.returncode == 2 and report["verdict"] == "fail"
        (found,) = [r for r in report["nodes"]["mgmt1"]["sections"]["host"]["checks"] if r["check"] == "ups"]
        assert (found["status"], found["code"]) == ("fail", "UPS_ON_BATTERY"), found
        assert found["message"].startswith("ups@127.0.0.1 runs on battery (battery 80 %, 600 s of runtime)")
        assert reason("gpu1") == "gpulab: ups: on battery"  # the ups role's drain, left alone by validate.yml

        simulate("OL", 100)
        assert wait_for(lambda: reason("gpu1") == "", 60), reason("gpu1")
        assert "DRAIN" not in on("mgmt1", "scontrol -o show node gpu1")
        assert reason("gpu2") == "lab: disk swap"
    finally:
        on("mgmt1", "scontrol update nodename=gpu2 state=resume")
    journal = on("mgmt1", f"journalctl -t gpulab-ups -o cat --no-pager --since @{since}")
    assert "drained gpu1: on battery" in journal and "resumed gpu1: power is back" in journal
    assert not re.search(r"(drained|resumed) gpu2", journal)  # its administrator's drain stays theirs


def test_low_battery_shuts_down_compute_then_storage_then_the_ups_host(lab_ups):
    since = on("mgmt1", "date +%s.%N")
    simulate("OB LB", 9)
    stamps, gone = {}, {}

    def all_down():
        for node in set(NODES) - set(stamps):
            stamp = on(node, f"stat -c %.9Y {MARKER} 2>/dev/null || true")
            if stamp:
                stamps[node] = float(stamp)
                gone[node] = time.time()  # before the node stops answering: a tier after it cannot go earlier
                answer_ping(node, False)  # it has powered off
        return len(stamps) == len(NODES)

    # A bound for a stuck shutdown; each tier waits at most ups_tier_wait (30 s in the lab) for the one before.
    assert wait_for(all_down, 150), stamps
    # storage1 went once gpu1 and gpu2 had gone, and mgmt1 once storage1 had: not at their bounds.
    assert max(gone[node] for node in COMPUTE) < stamps["storage1"] < gone["storage1"] < stamps["mgmt1"], (stamps, gone)
    assert stamps["storage1"] - max(gone[node] for node in COMPUTE) < 20, (stamps, gone)
    assert stamps["mgmt1"] - gone["storage1"] < 20, (stamps, gone)
    journal = {node: on(node, f"journalctl -t gpulab-ups -o cat --no-pager --since @{since}") for node in NODES}
    assert "shutdown: gpu1, gpu2 have gone; going now" in journal["storage1"], journal["storage1"]
    assert "shutdown: gpu1, gpu2, storage1 have gone; going now" in journal["mgmt1"], journal["mgmt1"]
    assert not any("shutdown:" in journal[node] for node in COMPUTE)  # the first tier waits for nobody
    # mgmt1 asked upsd for the forced shutdown and left the flag that tells the UPS to power off.
    assert on("mgmt1", "upsc ups@127.0.0.1 ups.status").startswith("FSD")
    assert on("mgmt1", "test -e /etc/killpower && echo flag") == "flag"
    # Every upsmon has done its work and stopped, as it does before a real power-off.
    for node in NODES:
        assert wait_for(lambda node=node: on(node, "systemctl is-active nut-monitor || true") == "inactive", 30), node


@pytest.fixture
def gpu1_with_gpus():
    """gpu1 with the nvidia-smi stand-in on its own JSON file: a GeForce at 450 W (150-600 allowed) and an
    A100 at 250 W (150-250)."""
    code = (STAND_INS / "nvidia_smi.py").read_text()
    state = (STAND_INS / "nvml-two-gpus.json").read_text()
    wrapper = '#!/bin/sh\nGPULAB_NVML_STAND_IN=/root/ups-gpus.json exec python3 /root/nvidia_smi.py "$@"\n'
    on(
        "gpu1",
        f"printf %s {shlex.quote(code)} > /root/nvidia_smi.py && printf %s {shlex.quote(state)} > /root/ups-gpus.json"
        f" && printf %s {shlex.quote(wrapper)} > /usr/local/bin/nvidia-smi && chmod 755 /usr/local/bin/nvidia-smi",
    )
    yield lambda: [gpu["limit_mw"] for gpu in json.loads(on("gpu1", "cat /root/ups-gpus.json"))["gpus"]]
    on("gpu1", "rm -f /usr/local/bin/nvidia-smi /root/nvidia_smi.py /root/ups-gpus.json /run/gpulab-ups-gpu-limits")


def test_on_battery_jobs_get_the_signal_and_gpus_are_capped_until_power_is_back(lab_ups, gpu1_with_gpus):
    limits = gpu1_with_gpus
    assert limits() == [450000, 250000]
    marker = "/tmp/gpulab-ups-signal"
    on("gpu1", f"rm -f {marker}")
    # A job that checkpoints on USR1 (here: leaves a marker); sleep is a child the signal reaches too.
    job = on(
        "mgmt1",
        f"sbatch --parsable -w gpu1 -o /dev/null --wrap 'trap \"touch {marker}\" USR1; while :; do sleep 1; done'",
    )
    try:
        assert wait_for(lambda: on("mgmt1", f"squeue -h -j {job} -o %T") == "RUNNING", 60)
        simulate("OB DISCHRG", 80)
        # ups_gpu_power_limit 200 W: the GeForce comes down to it, and so does the A100 (250 W before).
        assert wait_for(lambda: limits() == [200000, 200000], 60), limits()
        assert wait_for(lambda: on("gpu1", f"test -e {marker} && echo signalled || true") == "signalled", 60)
        assert on("mgmt1", f"squeue -h -j {job} -o %T") == "RUNNING"  # signalled, not ended
        simulate("OL", 100)
        assert wait_for(lambda: limits() == [450000, 250000], 60), limits()
    finally:
        on("mgmt1", f"scancel {job}")
    journal = on("gpu1", "journalctl -t gpulab-ups -o cat --no-pager")
    assert "on battery: GPU-5f3b1a9e-2c44-8d1e-7f0a-1b2c3d4e5f60 held at 200 W (was 450.00 W)" in journal
    assert "power back: GPU-8a7c6b5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d at 250.00 W again" in journal
    assert "sent SIGUSR1 to the jobs running on gpu1,gpu2" in on("mgmt1", "journalctl -t gpulab-ups -o cat --no-pager")
    # Nodes whose GPUs cannot be read say so instead of failing: gpu2's nvidia-smi finds no GPU (the
    # driver's userspace without a GPU), mgmt1 has no nvidia-smi at all.
    assert "on battery: could not read the GPUs' power limits; none capped" in on(
        "gpu2", "journalctl -t gpulab-ups -o cat --no-pager"
    )
    assert "no nvidia-smi here: no GPU to cap" in on("mgmt1", "journalctl -t gpulab-ups -o cat --no-pager")
