import pytest

from ansible_collections.gpulab.cluster.plugins.filter.host_facts import (
    gpu_count_problem,
    gpus_per_node,
    in_container,
    missing,
    monitoring_server_host,
)


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        ({"virtualization_role": "guest", "virtualization_type": "docker"}, True),
        ({"virtualization_role": "guest", "virtualization_type": "lxc"}, True),
        ({"virtualization_role": "guest", "virtualization_type": "kvm"}, False),  # a VM has its own kernel
        ({"virtualization_role": "host", "virtualization_type": "kvm"}, False),
        ({}, False),  # facts without the virtual subset: treated as a machine
    ],
)
def test_in_container(facts, expected):
    assert in_container(facts) is expected


def test_gpus_per_node_is_the_smallest_count_of_the_gpu_nodes():
    hostvars = {"gpu1": {"gpulab_gpu_count": 4}, "gpu2": {"gpulab_gpu_count": "2"}, "cpu1": {}, "login1": {}}
    assert gpus_per_node(hostvars, ["gpu1", "gpu2", "cpu1"]) == 2  # the CPU node does not lower it
    assert gpus_per_node(hostvars, ["gpu1"]) == 4
    assert gpus_per_node(hostvars, ["cpu1", "login1"]) == 0
    assert gpus_per_node(hostvars, []) == 0


def test_the_monitoring_server_is_the_inventory_s_choice_else_the_first_management_node():
    groups = {"all": ["mgmt1", "mgmt2", "gpu1"], "management": ["mgmt1", "mgmt2"]}
    assert monitoring_server_host({"mgmt1": {}, "mgmt2": {}, "gpu1": {}}, groups) == "mgmt1"
    assert monitoring_server_host({"mgmt1": {}, "mgmt2": {}, "gpu1": {"monitoring_server": True}}, groups) == "gpu1"
    assert monitoring_server_host({"mgmt1": {"monitoring_server": "false"}, "mgmt2": {}, "gpu1": {}}, groups) == "mgmt2"
    assert monitoring_server_host({"gpu1": {}}, {"all": ["gpu1"]}) == ""


def test_missing_names_each_unknown_item_once_in_order():
    assert missing(["gpu9", "gpu1", "gpu9", "ceph9"], ["gpu1", "gpu2"]) == ["gpu9", "ceph9"]
    assert missing([], ["gpu1"]) == []


@pytest.mark.parametrize("count", [None, 1, 8, "2", 2.0])
def test_a_whole_gpu_count_or_none_holds(count):
    assert gpu_count_problem("gpu1", count) is None


@pytest.mark.parametrize("count", [0, -1, 1.5, "two", True, "inf", [2]])
def test_any_other_gpu_count_is_named_with_its_host(count):
    assert gpu_count_problem("gpu1", count) == (
        f"gpu1: gpulab_gpu_count must be a whole number of at least 1, got {count!r}; "
        "leave it unset on a node without GPUs"
    )
