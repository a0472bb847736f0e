"""playbooks/upgrade.yml on the Ceph storage node: Ceph asked first (its only node: the upgrade is refused
unless the operator accepts the outage), then noout set while it is upgraded, an OSD that goes down in the
middle awaited, noout cleared after, and the cluster back to HEALTH_OK. Runs after test_ceph.py (a healthy
cluster with three OSDs, all on ceph-st).

The storage node is first put one tzdata behind (the oldest version the archive offers), so there is
a real upgrade to do. --limit ceph-st: the clients here run no Slurm.
"""

import json
import threading
import time

import pytest
from polling import wait_for


def upgrade(ansible_playbook, allow_outage=True):
    extra = json.dumps({"upgrade_ceph_allow_outage": allow_outage})
    return ansible_playbook("playbooks/upgrade.yml", "--limit", "ceph-st", "-e", extra, timeout=900)


def tzdata(st):
    return st.check_output("dpkg-query -W -f '${Version}' tzdata")


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
def versions(scenario_host):
    """(old, new) tzdata: ceph-st at the archive's oldest, whose upgrade candidate is newer."""
    st = scenario_host("ceph-st")
    offered = st.check_output("apt-cache madison tzdata | awk '{print $3}'").split()
    old, new = offered[-1], offered[0]
    assert old != new, offered
    st.check_output(f"DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades tzdata={old}")
    assert ceph(st, "health")["status"] == "HEALTH_OK"
    return old, new


def test_a_node_ceph_cannot_lose_is_refused_naming_what_would_stop(ansible_playbook, scenario_host, versions):
    st = scenario_host("ceph-st")
    commands = noout_commands(st)
    run = upgrade(ansible_playbook, allow_outage=False)
    assert run.returncode != 0
    message = run.stdout.split("ceph-st was not upgraded: ", 1)[1]
    # All three OSDs and the only monitor: Ceph's own words for each, then how to go on.
    assert "osd 0 1 2: unsafe to stop osd(s)" in message, message[:1500]
    assert "mon ceph-st: " in message, message[:1500]
    assert "-e upgrade_ceph_allow_outage=true" in message
    assert tzdata(st) == versions[0]
    assert "noout" not in ceph(st, "osd", "dump")["flags"]
    assert noout_commands(st) == commands
    assert not st.file("/var/lib/gpulab/upgrade-noout").exists


@pytest.fixture(scope="module")
def upgraded(ansible_playbook, scenario_host, versions):
    """The upgrade with the outage accepted, while OSD 2 is down (as a node's reboot leaves it): it is started
    only once noout is set, so the run cannot end before that OSD is back up unless it failed to wait."""
    st = scenario_host("ceph-st")
    before = noout_commands(st)
    st.check_output("systemctl stop ceph-osd@2")
    assert wait_for(lambda: ceph(st, "osd", "stat")["num_up_osds"] == 2, 60, step=1)
    seen, run_over = {}, threading.Event()

    def start_the_osd_under_noout():
        wait_for(lambda: run_over.is_set() or "noout" in ceph(st, "osd", "dump")["flags"], 600, step=1)
        seen["noout_while_running"] = not run_over.is_set()
        st.check_output("systemctl start ceph-osd@2")
        seen["up"] = wait_for(lambda: ceph(st, "osd", "stat")["num_up_osds"] == 3, 300, step=1)
        seen["up_at"] = time.monotonic()

    starter = threading.Thread(target=start_the_osd_under_noout)
    starter.start()
    try:
        run = upgrade(ansible_playbook)
        seen["run_ended_at"] = time.monotonic()
    finally:
        run_over.set()
        starter.join()
    return st, run, before, versions[1], seen


def test_the_storage_node_is_upgraded_under_noout_and_the_cluster_returns_to_health(upgraded):
    st, run, before, new, seen = upgraded
    assert run.returncode == 0, run.stdout[-3000:]
    assert seen["noout_while_running"] and seen["up"], seen
    # The OSD came up after noout was set, and the run ended only after that: it waited.
    assert seen["up_at"] <= seen["run_ended_at"], seen
    assert tzdata(st) == new
    assert "noout" not in ceph(st, "osd", "dump")["flags"]
    # The monitor commits its log in batches: the last command may show a moment later.
    assert wait_for(lambda: noout_commands(st)[len(before) :] == ["set", "unset"], 60), noout_commands(st)
    assert wait_for(lambda: ceph(st, "health")["status"] == "HEALTH_OK", 120), ceph(st, "health")
    stat = ceph(st, "osd", "stat")
    assert stat["num_up_osds"] == stat["num_osds"] == 3


def test_nothing_to_upgrade_sets_no_flag_and_changes_nothing(ansible_playbook, upgraded):
    st, _run, _before, _new, _seen = upgraded
    commands = noout_commands(st)
    run = upgrade(ansible_playbook)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "ceph-st (storage): 0 package(s) to upgrade; no reboot needed" in run.stdout
    assert "nothing to do, no flag set" in run.stdout
    assert "changed=0" in next(line for line in run.stdout.splitlines() if line.startswith("ceph-st "))
    assert noout_commands(st) == commands


def test_a_noout_an_earlier_run_left_is_cleared_and_an_operators_is_not(ansible_playbook, upgraded):
    st, _run, _before, _new, _seen = upgraded
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
