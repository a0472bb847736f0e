"""The ceph role's settings check: every problem at once, each naming its variable."""

from ansible_collections.gpulab.cluster.plugins.filter.ceph import ceph_problems

GOOD = {
    "mon_hosts": ["storage1"],
    "mds_hosts": ["storage1"],
    "fsid": "0b9a1f0e-6c4e-4d7b-9a55-3f2d5c1e7a10",
    "pool_size": 3,
    "pool_min_size": 2,
    "traffic_class": "storage",
    "networks": {"management": {}, "storage": {}},
    "allow_overwrite": ["/dev/sdb"],
    "luks_devices": [{"name": "data0", "device": "/dev/sdd"}],
}


def test_good_ceph_settings_have_no_problem():
    assert ceph_problems(["/dev/sdb", "/dev/sdc"], **GOOD) == []


def test_every_ceph_problem_at_once_each_naming_its_variable():
    bad = {
        **GOOD,
        "mds_hosts": ["storage1", "ceph-c1"],
        "fsid": "my-cluster",
        "pool_size": 2,
        "pool_min_size": 3,
        "traffic_class": "compute",
        "allow_overwrite": ["/dev/sda"],
    }
    assert ceph_problems(["/dev/sdb", "/dev/mapper/data0", "/dev/sdd"], **bad) == [
        "ceph_mds_hosts must be monitor hosts (not: ceph-c1)",
        "ceph_fsid must be a lower-case UUID (got 'my-cluster')",
        "ceph_pool_min_size (3) must not exceed ceph_pool_size (2)",
        "ceph_traffic_class 'compute' must be one of gpulab_network.networks (management, storage)",
        "ceph_allow_overwrite may name only devices in ceph_osd_devices (not: /dev/sda)",
        "ceph_osd_devices names disks that luks_devices encrypts (/dev/mapper/data0, /dev/sdd): OSDs on LUKS are not"
        " supported, as their activation at boot is not ordered after the disk is opened; give Ceph unencrypted"
        " disks of its own",
    ]
