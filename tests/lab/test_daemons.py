"""Daemons stopped by hand are started again by the next run of their roles, and nothing else changes: the ceph and
slurm roles read once which of their daemons run (node_state) and start only the others."""

import re
import shlex
import subprocess

from helpers import on, playbook, wait_for

STOPPED = {"storage1": ["ceph-mgr@storage1", "ceph-osd@1"], "gpu1": ["slurmd"], "gpu2": ["munge"]}


def changed(run):
    """{host: [task, ...]} of the tasks that reported a change."""
    found, task = {}, None
    for line in run.stdout.splitlines():
        if line.startswith(("TASK [", "RUNNING HANDLER [")):
            task = line[line.index("[") + 1 : line.rindex("]")]
        elif match := re.match(r"changed: \[([^\]]+)\]", line):
            found.setdefault(match.group(1), []).append(task)
    return found


def test_daemons_stopped_by_hand_are_started_by_the_next_run_and_nothing_else_changes():
    on("gpu2", "systemctl disable --quiet munge")
    for node, units in STOPPED.items():
        on(node, "systemctl stop " + " ".join(units))

    ceph = playbook("playbooks/storage.yml", "--tags", "ceph")
    slurm = playbook("playbooks/slurm.yml")
    assert ceph.returncode == 0, ceph.stdout[-3000:]
    assert slurm.returncode == 0, slurm.stdout[-3000:]
    for node, units in STOPPED.items():
        assert on(node, "systemctl is-active " + " ".join(units)).split() == ["active"] * len(units)
    assert on("gpu2", "systemctl is-enabled munge") == "enabled"
    assert changed(ceph) == {
        "storage1": [
            "gpulab.cluster.ceph : Start the manager",
            "gpulab.cluster.ceph : Install the OSD activation script and unit; activate and run the OSDs, now and at "
            "every boot",
        ]
    }
    assert changed(slurm) == {
        "gpu1": ["gpulab.cluster.slurm : Start slurmd"],
        "gpu2": ["gpulab.cluster.slurm : Start munge (restart it when the key changed)"],
    }
    # Back as the tests after this one expect it: Ceph healthy with its metrics served, both compute nodes idle.
    assert wait_for(lambda: on("storage1", "ceph health") == "HEALTH_OK", 180), on("storage1", "ceph health detail")
    assert wait_for(lambda: answers("storage1", f"import urllib.request; urllib.request.urlopen({METRICS!r})"), 120)
    nodes = "sinfo -h -N -o '%N %t' -n gpu1,gpu2"
    assert wait_for(lambda: on("mgmt1", nodes).split() == ["gpu1", "idle", "gpu2", "idle"], 120), on("mgmt1", nodes)


METRICS = "http://172.30.10.12:9283/metrics"  # the Ceph manager's, which Prometheus scrapes


def answers(node, python):
    """Whether `python3 -c python` on node exits 0 (a service that does not answer yet: False)."""
    try:
        on(node, f"python3 -c {shlex.quote(python)}")
    except subprocess.CalledProcessError:
        return False
    return True
