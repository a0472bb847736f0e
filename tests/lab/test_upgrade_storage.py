"""upgrade.yml on the lab's only storage node (Ceph's monitor, MDS and both OSDs): Ceph's ok-to-stop refuses,
and the run stops before anything is drained or set; with upgrade_ceph_allow_outage every compute node is
drained first (Slurm's accounting records the drain with its reason) and resumed once Ceph is back.

storage1 is first put one tzdata behind (the oldest version the archive offers): a real upgrade to do.
"""

import json
import subprocess
from pathlib import Path

import pytest
from helpers import on, wait_for

ROOT = Path(__file__).resolve().parents[2]
COMPUTE = ("gpu1", "gpu2")
OUTAGE_REASON = "gpulab: upgrade-ceph: Ceph down while storage1 is upgraded"


def upgrade(**settings):
    return subprocess.run(
        ["ansible-playbook", "playbooks/upgrade.yml", "--limit", "storage1", "-e", json.dumps(settings)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def tzdata():
    return on("storage1", "dpkg-query -W -f '${Version}' tzdata")


def drain_events(since):
    """(node, reason, ended) of each gpulab drain Slurm's accounting recorded on the compute nodes since `since`
    (Slurm's own events, a node not responding for a moment on a busy machine, are not the upgrade's)."""
    rows = on(
        "mgmt1",
        f"sacctmgr -n -P show event nodes={','.join(COMPUTE)} start={since} format=NodeName,Reason%200,TimeEnd",
    )
    events = [tuple(row.split("|")) for row in rows.splitlines() if row]
    return [event for event in events if event[1].startswith("gpulab:")]


@pytest.fixture(scope="module")
def versions():
    offered = on("storage1", "apt-cache madison tzdata | awk '{print $3}'").split()
    old, new = offered[-1], offered[0]
    assert old != new, offered
    on("storage1", f"DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades tzdata={old}", 300)
    return old, new


def test_ceph_refuses_and_nothing_is_drained_or_set(versions):
    since = on("mgmt1", "date +%Y-%m-%dT%H:%M:%S")
    run = upgrade()
    assert run.returncode != 0
    message = run.stdout.split("storage1 was not upgraded: ", 1)[1][:2000]
    assert "osd 0 1: unsafe to stop osd(s)" in message and "mon storage1: " in message, message
    assert tzdata() == versions[0]
    assert "noout" not in on("storage1", "ceph osd dump --format json")
    assert drain_events(since) == []


def test_with_the_outage_allowed_every_compute_node_is_drained_first_and_resumed(versions):
    since = on("mgmt1", "date +%Y-%m-%dT%H:%M:%S")
    run = upgrade(upgrade_ceph_allow_outage=True)
    assert run.returncode == 0, run.stdout[-3000:]
    assert tzdata() == versions[1]

    def all_ended():  # slurmdbd records a resume a moment after slurmctld makes it
        events = drain_events(since)
        return events if events and all(end not in ("", "Unknown") for _node, _reason, end in events) else None

    events = wait_for(all_ended, 60) or drain_events(since)
    # One drain per compute node, with the outage's reason, each ended (resumed) by the run.
    assert sorted(node for node, _reason, _end in events) == list(COMPUTE), events
    assert all(reason == OUTAGE_REASON and end not in ("", "Unknown") for _node, reason, end in events), events
    for node in COMPUTE:
        # Bounded by slurmctld's ping interval: a resumed node may show idle* until its next ping answers.
        sinfo = f"sinfo -h -N -n {node} -o %t"
        assert wait_for(lambda sinfo=sinfo: on("mgmt1", sinfo) == "idle", 60), on("mgmt1", sinfo)
