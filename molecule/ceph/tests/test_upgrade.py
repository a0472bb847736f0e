"""playbooks/upgrade.yml on the Ceph storage node: noout set while it is upgraded and cleared after,
and the cluster back to HEALTH_OK. Runs after test_ceph.py (a healthy cluster with three OSDs).

The storage node is first put one tzdata behind (the oldest version the archive offers), so there is
a real upgrade to do. --limit ceph-st: the clients here run no Slurm.
"""

import json
import time

import pytest


def wait_for(predicate, seconds, step=3):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


def upgrade(ansible_playbook):
    return ansible_playbook("playbooks/upgrade.yml", "--limit", "ceph-st", timeout=900)


def ceph(st, *args):
    return json.loads(st.check_output("ceph --format json " + " ".join(args)))


def noout_commands(st):
    """The noout set/unset commands the monitor's audit log recorded as finished, oldest first."""
    entries = ceph(st, "log", "last", "1000", "debug", "audit")
    commands = []
    for entry in entries:
        message = entry.get("message", "")
        if "noout" in message and message.endswith(": finished"):
            commands.append("unset" if '"osd unset"' in message else "set")
    return commands


@pytest.fixture(scope="module")
def upgraded(ansible_playbook, scenario_host):
    st = scenario_host("ceph-st")
    offered = st.check_output("apt-cache madison tzdata | awk '{print $3}'").split()
    old, new = offered[-1], offered[0]
    assert old != new, offered
    st.check_output(f"DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades tzdata={old}")
    assert ceph(st, "health")["status"] == "HEALTH_OK"
    before = noout_commands(st)
    run = upgrade(ansible_playbook)
    return st, run, before, new


def test_the_storage_node_is_upgraded_under_noout_and_the_cluster_returns_to_health(upgraded):
    st, run, before, new = upgraded
    assert run.returncode == 0, run.stdout[-3000:]
    assert st.check_output("dpkg-query -W -f '${Version}' tzdata") == new
    assert "noout" not in ceph(st, "osd", "dump")["flags"]
    # The monitor commits its log in batches: the last command may show a moment later.
    assert wait_for(lambda: noout_commands(st)[len(before) :] == ["set", "unset"], 60), noout_commands(st)
    assert ceph(st, "health")["status"] == "HEALTH_OK"
    stat = ceph(st, "osd", "stat")
    assert stat["num_up_osds"] == stat["num_osds"] == 3


def test_nothing_to_upgrade_sets_no_flag_and_changes_nothing(ansible_playbook, upgraded):
    st, _run, _before, _new = upgraded
    commands = noout_commands(st)
    run = upgrade(ansible_playbook)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "ceph-st (Ceph): 0 package(s) to upgrade; no reboot needed" in run.stdout
    assert "nothing to do, no flag set" in run.stdout
    assert "changed=0" in next(line for line in run.stdout.splitlines() if line.startswith("ceph-st "))
    assert noout_commands(st) == commands


def test_a_noout_an_earlier_run_left_is_cleared_and_an_operators_is_not(ansible_playbook, upgraded):
    st, _run, _before, _new = upgraded
    # An operator's noout (no gpulab marker): a run with nothing to do leaves it set.
    st.check_output("ceph osd set noout")
    try:
        run = upgrade(ansible_playbook)
        assert run.returncode == 0, run.stdout[-3000:]
        assert "noout" in ceph(st, "osd", "dump")["flags"]
    finally:
        st.check_output("ceph osd unset noout")
    # A run that stopped after setting noout leaves it and the marker: the next run clears both.
    st.check_output("mkdir -p /var/lib/gpulab && echo left > /var/lib/gpulab/upgrade-noout && ceph osd set noout")
    run = upgrade(ansible_playbook)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "TASK [gpulab.cluster.upgrade : Clear the noout an earlier run left]" in run.stdout
    assert "noout" not in ceph(st, "osd", "dump")["flags"]
    assert not st.file("/var/lib/gpulab/upgrade-noout").exists
    assert wait_for(lambda: ceph(st, "health")["status"] == "HEALTH_OK", 60), ceph(st, "health")
