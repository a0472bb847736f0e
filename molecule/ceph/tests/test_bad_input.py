"""Settings the ceph role refuses before it touches a node, each naming the variable."""

import json

import pytest

CASES = [
    ({"ceph_pool_size": 0}, "ceph_pool_size"),
    ({"ceph_failure_domain": "rack"}, "ceph_failure_domain"),
    ({"ceph_pool_size": 2, "ceph_pool_min_size": 3}, "ceph_pool_min_size (3) must not exceed ceph_pool_size (2)"),
    ({"ceph_fsid": "my-cluster"}, "ceph_fsid must be a lower-case UUID (got 'my-cluster')"),
    ({"ceph_mds_hosts": ["ceph-c1"]}, "ceph_mds_hosts must be monitor hosts (not: ceph-c1)"),
    ({"ceph_traffic_class": "storage"}, "ceph_traffic_class 'storage' must be one of gpulab_network.networks"),
    (
        {"ceph_allow_overwrite": ["/dev/sda"]},
        "ceph_allow_overwrite may name only devices in ceph_osd_devices (not: /dev/sda)",
    ),
    (
        {"luks_devices": [{"name": "data0", "device": "/dev/xvdz"}], "ceph_osd_devices": ["/dev/mapper/data0"]},
        "ceph_osd_devices names disks that luks_devices encrypts (/dev/mapper/data0): OSDs on LUKS are not supported",
    ),
]


@pytest.mark.parametrize(("extra", "message"), CASES)
def test_refused_with_the_variable_named(ansible_playbook, extra, message):
    run = ansible_playbook("playbooks/storage.yml", "--tags", "ceph", "--limit", "ceph-st", "-e", json.dumps(extra))
    assert run.returncode != 0
    assert message in run.stdout, run.stdout[-2000:]
    assert "changed=0" in run.stdout
