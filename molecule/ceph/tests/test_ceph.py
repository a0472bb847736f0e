"""A real Ceph cluster in containers: health, CephFS shared between clients, OSDs and mounts back after restarts.

Tests run in file order; the later ones change the cluster (a refused device, an allowed one,
a new client, a restart of the storage node).
"""

import json
import re
from pathlib import Path

import pytest
from polling import wait_for

SCENARIO = Path(__file__).resolve().parents[1]
PAYLOAD = "/mnt/cephfs/payload.bin"
PRECIOUS = "checkpoints of a three-week run\n"


@pytest.fixture(scope="module")
def st(scenario_host):
    return scenario_host("ceph-st")


def ceph(st, *args):
    return json.loads(st.check_output("ceph --format json " + " ".join(args)))


def osds_up(st):
    stat = ceph(st, "osd", "stat")
    return stat["num_up_osds"], stat["num_in_osds"], stat["num_osds"]


def test_cluster_is_healthy_with_two_osds_a_monitor_a_manager_and_an_mds(st):
    status = ceph(st, "status")
    assert status["health"]["status"] == "HEALTH_OK", status["health"]
    assert status["quorum_names"] == ["ceph-st"]
    assert osds_up(st) == (2, 2, 2)
    assert status["mgrmap"]["available"] is True
    fs = ceph(st, "fs", "status", "cephfs")
    assert [m["state"] for m in fs["mdsmap"]] == ["active"]


def test_pools_sized_for_a_small_cluster(st):
    for pool in ("cephfs_data", "cephfs_metadata"):
        assert ceph(st, "osd", "pool", "get", pool, "size")["size"] == 2
        assert ceph(st, "osd", "pool", "get", pool, "min_size")["min_size"] == 1
    rule = ceph(st, "osd", "crush", "rule", "dump", "replicated_rule")
    assert [s.get("type") for s in rule["steps"] if s["op"].startswith("choose")] == ["osd"]


def test_each_client_has_its_own_key_with_only_cephfs_caps(st, scenario_host):
    for name in ("ceph-c1", "ceph-c2"):
        (entity,) = ceph(st, "auth", "get", f"client.{name}")
        assert entity["caps"] == {
            "mds": "allow rw fsname=cephfs",
            "mon": "allow r fsname=cephfs",
            "osd": "allow rw tag cephfs data=cephfs",
        }
        keyring = scenario_host(name).file(f"/etc/ceph/ceph.client.{name}.keyring")
        assert keyring.mode == 0o600 and keyring.user == "root"
        assert keyring.content_string == f"[client.{name}]\n\tkey = {entity['key']}\n"
        assert not scenario_host(name).file("/etc/ceph/ceph.client.admin.keyring").exists


def test_cephfs_mounted_on_both_clients_through_fstab(scenario_host):
    for name in ("ceph-c1", "ceph-c2"):
        client = scenario_host(name)
        assert client.check_output("findmnt -n -o FSTYPE /mnt/cephfs") == "fuse.ceph-fuse"
        fstab = [line.split() for line in client.file("/etc/fstab").content_string.splitlines()]
        assert [
            "none",
            "/mnt/cephfs",
            "fuse.ceph",
            f"ceph.id={name},ceph.client_fs=cephfs,ceph.client_mountpoint=/,_netdev,defaults",
            "0",
            "0",
        ] in fstab


def test_a_file_written_on_one_client_reads_back_identical_on_the_other(scenario_host):
    c1, c2 = scenario_host("ceph-c1"), scenario_host("ceph-c2")
    c1.check_output(f"head -c 8M /dev/urandom > {PAYLOAD} && sync")
    written = c1.check_output(f"sha256sum {PAYLOAD}").split()[0]
    assert c2.check_output(f"sha256sum {PAYLOAD}").split()[0] == written
    assert c2.file(PAYLOAD).size == 8 * 1024 * 1024


def test_a_device_with_data_is_refused_and_left_intact(ansible_playbook, st):
    extra = json.dumps({"ceph_osd_devices": ["/dev/xvdb", "/dev/xvdc", "/dev/xvdd"]})
    run = ansible_playbook("playbooks/storage.yml", "--tags", "ceph", "--limit", "ceph-st", "-e", extra)
    assert run.returncode != 0
    assert "refusing to write to /dev/xvdd: it holds ext4 (" in run.stdout
    assert (
        "label precious). Nothing was changed. If its data may be destroyed, add /dev/xvdd to ceph_allow_overwrite"
        in run.stdout
    )
    assert st.check_output("debugfs -R 'cat precious.txt' /dev/xvdd 2>/dev/null") + "\n" == PRECIOUS
    assert osds_up(st) == (2, 2, 2)


def test_a_named_device_becomes_a_third_osd_with_limit(ansible_playbook, st):
    extra = json.dumps(
        {"ceph_osd_devices": ["/dev/xvdb", "/dev/xvdc", "/dev/xvdd"], "ceph_allow_overwrite": ["/dev/xvdd"]}
    )
    run = ansible_playbook("playbooks/storage.yml", "--tags", "ceph", "--limit", "ceph-st", "-e", extra)
    assert run.returncode == 0, run.stdout[-3000:]
    assert wait_for(lambda: osds_up(st) == (3, 3, 3), 60)
    assert st.check_output("blkid -p -o value -s TYPE /dev/xvdd") == "ceph_bluestore"
    # A second run with the same settings finds three OSDs of this cluster and creates none.
    again = ansible_playbook("playbooks/storage.yml", "--tags", "ceph", "--limit", "ceph-st", "-e", extra)
    assert again.returncode == 0
    assert re.search(r"ceph-st\s+: ok=\d+\s+changed=0 ", again.stdout), again.stdout[-2000:]


def test_a_new_client_joins_with_limit(ansible_playbook, scenario_host, st):
    args = ("playbooks/storage.yml", "--tags", "ceph_client", "--limit", "ceph-c3")
    # Check mode makes no key: it says which task would.
    check = ansible_playbook(*args, "--check", inventories=(SCENARIO / "add-client.yml",))
    assert check.returncode == 0, check.stdout[-3000:]
    assert st.run("ceph auth get client.ceph-c3").rc == 2  # ENOENT
    run = ansible_playbook(*args, inventories=(SCENARIO / "add-client.yml",))
    assert run.returncode == 0, run.stdout[-3000:]
    # The key is made, and the run says so.
    created = run.stdout.split("Create this client's key with CephFS caps only]", 1)[1].split("TASK [", 1)[0]
    assert "changed: [ceph-c3 -> ceph-st]" in created, created
    assert st.run("ceph auth get client.ceph-c3").rc == 0
    written = scenario_host("ceph-c1").check_output(f"sha256sum {PAYLOAD}").split()[0]
    assert scenario_host("ceph-c3").check_output(f"sha256sum {PAYLOAD}").split()[0] == written


def test_restarting_the_storage_node_brings_every_osd_back_without_ansible(st, scenario_host, restart_container):
    written = scenario_host("ceph-c1").check_output(f"sha256sum {PAYLOAD}").split()[0]
    restart_container("ceph-st")
    assert wait_for(lambda: osds_up(st) == (3, 3, 3), 120), st.check_output("ceph osd tree")
    # Each OSD's directory was filled again from its device by gpulab's unit.
    log = st.check_output("journalctl -b -u gpulab-ceph-osd-activate --no-pager")
    assert sorted(re.findall(r"osd\.(\d) on /dev/xvd[bcd]: activated", log)) == ["0", "1", "2"]
    assert wait_for(lambda: ceph(st, "health")["status"] == "HEALTH_OK", 120), ceph(st, "health", "detail")
    assert scenario_host("ceph-c2").check_output(f"sha256sum {PAYLOAD}").split()[0] == written


def test_restarting_a_client_mounts_cephfs_again_from_fstab(scenario_host, restart_container):
    written = scenario_host("ceph-c1").check_output(f"sha256sum {PAYLOAD}").split()[0]
    restart_container("ceph-c2")
    c2 = scenario_host("ceph-c2")
    assert wait_for(lambda: c2.run("findmnt -n -o FSTYPE /mnt/cephfs").stdout.strip() == "fuse.ceph-fuse", 60)
    assert c2.check_output(f"sha256sum {PAYLOAD}").split()[0] == written
