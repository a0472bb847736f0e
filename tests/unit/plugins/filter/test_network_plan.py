import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.filter.network_plan import node_address, node_addresses

PLAN = {
    "address_offset": 10,
    "networks": {
        "management": {"subnet": "10.10.0.0/24"},
        "compute": {"subnet": "10.20.0.0/24"},
        "small": {"subnet": "192.168.5.0/29"},
    },
}


@pytest.mark.parametrize(
    ("traffic_class", "index", "expected"),
    [("management", 1, "10.10.0.11"), ("compute", 13, "10.20.0.23"), ("management", 244, "10.10.0.254")],
)
def test_node_address(traffic_class, index, expected):
    assert node_address(PLAN, traffic_class, index) == expected


def test_default_offset_is_10():
    assert node_address({"networks": {"management": {"subnet": "172.30.10.0/24"}}}, "management", 3) == ("172.30.10.13")


@pytest.mark.parametrize(
    ("traffic_class", "index", "message"),
    [
        ("management", 245, "does not fit in management subnet 10.10.0.0/24"),
        ("small", 1, "does not fit in small subnet 192.168.5.0/29"),
        ("storage", 1, "has no 'storage' entry; defined traffic classes: compute, management, small"),
        ("management", 0, "gpulab_node_index must be a positive integer, got 0"),
        ("management", "3", "gpulab_node_index must be a positive integer, got '3'"),
    ],
)
def test_node_address_refuses(traffic_class, index, message):
    with pytest.raises(AnsibleFilterError, match=message):
        node_address(PLAN, traffic_class, index)


def test_bad_subnet_names_the_variable():
    with pytest.raises(AnsibleFilterError, match=r"gpulab_network.networks.management.subnet '10.10.0/33'"):
        node_address({"networks": {"management": {"subnet": "10.10.0/33"}}}, "management", 1)


def test_node_addresses_prefers_explicit_management_address():
    hostvars = {
        "a": {"gpulab_node_index": 1},
        "b": {"gpulab_node_index": 2, "gpulab_address": "10.10.0.99"},
    }
    assert node_addresses(hostvars, ["a", "b"], PLAN) == {"a": "10.10.0.11", "b": "10.10.0.99"}
    assert node_addresses(hostvars, ["a", "b"], PLAN, "compute") == {"a": "10.20.0.11", "b": "10.20.0.12"}


def test_node_addresses_needs_an_index_or_address():
    with pytest.raises(AnsibleFilterError, match="host c has neither gpulab_node_index nor gpulab_address"):
        node_addresses({"c": {}}, ["c"], PLAN)
