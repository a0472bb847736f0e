"""The settings checks of the common, luks, nvidia_driver, cuda and nccl roles (their tasks/preflight.yml):
every problem at once, each naming its variable and the value it got."""

import pytest

from ansible_collections.gpulab.cluster.plugins.filter.common import common_problems
from ansible_collections.gpulab.cluster.plugins.filter.gpu_stack import (
    cuda_problems,
    nccl_problems,
    nvidia_driver_problems,
)
from ansible_collections.gpulab.cluster.plugins.filter.luks import luks_key_files, luks_problems

NETWORKS = {"management": {}, "storage": {}}
TANG = {"server": "mgmt1", "network": "storage", "unlock_timeout": 60}


@pytest.mark.parametrize(("stratum", "problems"), [(1, 0), (10, 0), ("15", 0), (0, 1), (16, 1), ("ten", 1), (True, 1)])
def test_the_local_stratum_is_1_to_15(stratum, problems):
    found = common_problems(stratum)
    assert len(found) == problems
    assert all(p == f"common_ntp_local_stratum must be between 1 and 15, got {stratum}" for p in found)


@pytest.mark.parametrize(
    ("version", "branch", "ok"),
    [
        ("", "535", True),
        (None, "535", True),
        ("535.216.01", "535", True),
        ("535.216.01", "tesla-535", True),
        ("550.54.14", "535", False),
        ("5350.1", "535", False),  # the branch's number, then a dot
        ("535", "535", False),
        ("latest", "535", False),
    ],
)
def test_a_driver_version_belongs_to_the_pinned_branch(version, branch, ok):
    expected = [] if ok else [
        f"nvidia_driver_version must be empty or an upstream version of branch {branch} such as "
        f"{branch.removeprefix('tesla-')}.309.01; got '{version}'"
    ]  # fmt: skip
    assert nvidia_driver_problems(version, branch=branch) == expected


def test_cuda_names_both_problems_at_once():
    assert cuda_problems("12.4", source="cuda_repo", distribution="Ubuntu") == []
    assert cuda_problems("11.8", source="distribution", distribution="Debian") == []
    assert cuda_problems("twelve", source="distribution", distribution="Ubuntu") == [
        "cuda_version must be major.minor such as 12.4 (got 'twelve')",
        "cuda_source 'distribution' exists on Debian only (got 'distribution' on Ubuntu)",
    ]
    assert cuda_problems("12.4.1", source="cuda_repo", distribution="Debian") == [
        "cuda_version must be major.minor such as 12.4 (got '12.4.1')"
    ]


@pytest.mark.parametrize(("version", "ok"), [("2.21.5", True), ("2.21", False), ("2.21.5-1", False), ("", False)])
def test_nccl_is_pinned_to_an_exact_release(version, ok):
    assert nccl_problems(version) == ([] if ok else [f"nccl_version must look like 2.21.5, got '{version}'"])


def test_luks_devices_need_unique_names_and_keys():
    devices = [{"name": "data0", "device": "/dev/vdb"}, {"name": "data1", "device": "/dev/vdc"}]
    keys = {"data0": "k0", "data1": "k1"}
    args = {"tang": False, "tang_settings": TANG, "hosts": ["mgmt1"], "networks": NETWORKS}
    assert luks_problems(devices, keys=keys, **args) == []
    assert luks_problems(devices, keys={"data1": "k1"}, **args) == [
        "luks_devices must have unique names, each with a key in luks_keys; without a key: data0"
    ]
    assert luks_problems(devices + devices[:1], keys=keys, **args) == [
        "luks_devices must have unique names, each with a key in luks_keys; without a key: none"
    ]


def test_a_key_derivation_time_if_set_is_seconds_above_0():
    args = {"keys": {}, "tang": False, "tang_settings": TANG, "hosts": ["mgmt1"], "networks": NETWORKS}
    for seconds in (None, 0.05, "0.5", 2):
        assert luks_problems([], iteration_time=seconds, **args) == []
    for seconds in (0, -1, "0", "soon", True):
        assert luks_problems([], iteration_time=seconds, **args) == [
            f"luks_pbkdf_iteration_time must be seconds above 0, or unset (got {seconds})"
        ]


def test_tang_settings_are_checked_only_with_tang_and_all_at_once():
    bad = {"server": "mgmt9", "network": "stroage", "unlock_timeout": 0}
    args = {"keys": {}, "hosts": ["mgmt1", "gpu1"], "networks": NETWORKS}
    assert luks_problems([], tang=False, tang_settings=bad, **args) == []
    assert luks_problems([], tang=True, tang_settings=TANG, **args) == []
    assert luks_problems([], tang=True, tang_settings=dict(TANG, unlock_timeout="60"), **args) == []
    for timeout in (0, "0", 1.5, "soon", None, True):
        assert luks_problems([], tang=True, tang_settings=dict(TANG, unlock_timeout=timeout), **args) == [
            f"luks_tang needs luks_tang_unlock_timeout at least 1 (got {timeout})"
        ]
    assert luks_problems([], tang=True, tang_settings=bad, **args) == [
        "luks_tang needs luks_tang_server to be an inventory host (got 'mgmt9')",
        "luks_tang needs luks_tang_network to be one of gpulab_network's networks (management, storage; got 'stroage')",
        "luks_tang needs luks_tang_unlock_timeout at least 1 (got 0)",
    ]


def test_each_disk_s_key_is_one_root_only_file():
    devices = [{"name": "data0", "device": "/dev/vdb"}, {"name": "data1", "device": "/dev/vdc"}]
    assert luks_key_files(devices, {"data0": "k0", "data1": 12345}, "/etc/luks-keys") == [
        {"path": "/etc/luks-keys/data0.key", "content": "k0", "owner": "root", "group": "root", "mode": "0400"},
        {"path": "/etc/luks-keys/data1.key", "content": "12345", "owner": "root", "group": "root", "mode": "0400"},
    ]
