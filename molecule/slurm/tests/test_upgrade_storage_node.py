"""A compute node that is a storage node too is upgraded by the storage play, which runs before the compute
play: drained around its running job first, then upgraded, gated and resumed; the compute play then finds
nothing to do. No Ceph here (no ceph_mon_hosts): the storage play's Ceph steps do not apply.

Runs after test_upgrade.py and test_upgrade_pins.py; slurm-gpu3 is put one tzdata behind again.
"""

import json
import re
import subprocess
import threading

import pytest
from polling import wait_for
from slurm_helpers import SCENARIO, TWO_GPUS, as_user, fake_gpus, node_state

NODE = "slurm-gpu3"
JOB_OUT = "/var/tmp/storage-node-job.out"
RELEASE = "/var/tmp/storage-node-job.release"  # the job ends once the test creates this on the node


def tzdata(host):
    return host.check_output("dpkg-query -W -f '${Version}' tzdata")


@pytest.fixture(scope="module")
def upgraded(ansible_playbook, ctl, node):
    """upgrade.yml --limit slurm-gpu3 while a job runs there; the job ends once the node shows draining."""
    gpu3 = node(NODE)
    offered = gpu3.check_output("apt-cache madison tzdata | awk '{print $3}'").split()
    old, new = offered[-1], offered[0]
    gpu3.check_output(f"DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades tzdata={old}")
    fake_gpus(gpu3, TWO_GPUS)
    gpu3.check_output(f"rm -f {JOB_OUT} {RELEASE}")
    job = as_user(
        ctl,
        "alice",
        f"sbatch --parsable -w {NODE} -t 10 -o {JOB_OUT} --wrap "
        f"'echo started; while [ ! -e {RELEASE} ]; do sleep 1; done; echo finished'",
    ).strip()
    assert wait_for(lambda: "RUNNING" in ctl.check_output(f"squeue -h -j {job} -o %T"), 60)
    seen = {}

    def release_when_draining():
        seen["draining"] = wait_for(lambda: "drng" in ctl.check_output(f"sinfo -h -N -n {NODE} -o %t"), 300)
        seen["job_state_then"] = ctl.check_output(f"squeue -h -j {job} -o %T")
        gpu3.check_output(f"touch {RELEASE}")

    watcher = threading.Thread(target=release_when_draining)
    watcher.start()
    try:
        run = ansible_playbook(
            "playbooks/upgrade.yml", "--limit", NODE, "-e", json.dumps({"validation_nccl_tests": False}),
            inventories=(SCENARIO / "add-node.yml", SCENARIO / "storage-node.yml"), timeout=900,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        gpu3.run(f"touch {RELEASE}")
        raise
    finally:
        watcher.join()
        gpu3.check_output("rm -f /usr/local/bin/nvidia-smi /usr/local/share/gpulab-query.csv")
    return run, job, seen, new


def test_the_storage_play_drains_it_around_its_job_then_gates_and_resumes_it(ctl, node, upgraded):
    run, job, seen, new = upgraded
    assert run.returncode == 0, run.stdout[-3000:]
    assert seen == {"draining": True, "job_state_then": "RUNNING"}, seen
    storage_play = run.stdout.split("PLAY [Storage nodes, one at a time]", 1)[1].split("PLAY [Compute nodes", 1)[0]
    assert re.search(rf"{NODE} \(storage\): \d+ package\(s\) to upgrade \([^)]*\btzdata\b", storage_play)
    for task in (
        "upgrade : Drain it in Slurm",
        "upgrade : Wait until no job runs on it",
        "validation : Check GPU health",
        "upgrade : Resume it",
    ):
        assert f"TASK [gpulab.cluster.{task}]" in storage_play, task
    # The job finished intact, and tzdata moved only after its end.
    state, nodes, end = ctl.check_output(f"sacct -n -X -P -j {job} -o State,NodeList,End").split("|")
    assert (state, nodes) == ("COMPLETED", NODE)
    assert node(NODE).file(JOB_OUT).content_string == "started\nfinished\n"
    upgraded_at = node(NODE).check_output("grep ' upgrade tzdata:' /var/log/dpkg.log | tail -1 | cut -c1-19")
    assert upgraded_at >= end.replace("T", " "), (upgraded_at, end)
    assert tzdata(node(NODE)) == new
    # Bounded by slurmctld's ping interval: the node may show idle* until its next ping answers.
    assert wait_for(lambda: node_state(ctl, NODE) == ("IDLE", ""), 200), node_state(ctl, NODE)


def test_the_compute_play_then_finds_nothing_to_do(upgraded):
    run, _job, _seen, _new = upgraded
    compute_play = run.stdout.split("PLAY [Compute nodes, one batch at a time]", 1)[1]
    assert re.search(
        rf"{NODE}: 0 package\(s\) to upgrade; no reboot needed[^\n]*; nothing to do, not drained", compute_play
    )
