import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.filter.network_plan import (
    bond_problems,
    network_problems,
    node_address,
    node_addresses,
    plan_problems,
    planned_mtus,
)

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
        ("management", 0, "gpulab_node_index must be a whole number of at least 1, got 0"),
        ("management", "three", "gpulab_node_index must be a whole number of at least 1, got 'three'"),
        ("management", True, "gpulab_node_index must be a whole number of at least 1, got True"),
    ],
)
def test_node_address_refuses(traffic_class, index, message):
    with pytest.raises(AnsibleFilterError, match=message):
        node_address(PLAN, traffic_class, index)


def test_a_whole_number_given_with_e_counts_as_the_number():
    # `-e gpulab_node_index=3` arrives as the string '3'.
    assert node_address(PLAN, "management", "3") == node_address(PLAN, "management", 3)


def test_unknown_keys_are_named_with_the_likely_one():
    plan = dict(PLAN, netwroks={}, roce={"dscp": 26, "ecm": True})
    plan["networks"] = dict(PLAN["networks"], compute=dict(PLAN["networks"]["compute"], vlna=20))
    problems = plan_problems(plan)
    assert "gpulab_network has an unknown key 'netwroks': did you mean 'networks'?" in problems
    assert "gpulab_network.roce has an unknown key 'ecm': did you mean 'ecn'?" in problems
    assert "gpulab_network.networks.compute has an unknown key 'vlna': did you mean 'vlan'?" in problems
    typo_only = {"fabric": "roce", "netwroks": PLAN["networks"]}
    assert plan_problems(typo_only) == [
        "gpulab_network has an unknown key 'netwroks': did you mean 'networks'?",
        "gpulab_network must be a mapping with a non-empty 'networks' mapping",
    ]


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


def test_planned_mtus_hold_management_and_the_node_s_classes_to_the_plan():
    plan = {**PLAN, "networks": {**PLAN["networks"], "compute": {"subnet": "10.20.0.0/24", "mtu": 9000}}}
    hostvars = {"b": {"gpulab_node_index": 2, "gpulab_address": "10.10.0.99"}}
    assert planned_mtus(hostvars, "b", plan, ["compute", "storage"]) == [
        {"traffic_class": "management", "address": "10.10.0.99", "mtu": 1500},
        {"traffic_class": "compute", "address": "10.20.0.12", "mtu": 9000},
    ]
    assert planned_mtus({"c": {}}, "c", plan, ["compute"]) == []  # not placed by the plan: nothing to hold it to


def test_node_addresses_needs_an_index_or_address():
    with pytest.raises(AnsibleFilterError, match="host c has neither gpulab_node_index nor gpulab_address"):
        node_addresses({"c": {}}, ["c"], PLAN)


GOOD_PLAN = {
    "fabric": "roce",
    "networks": {
        "management": {"subnet": "10.10.0.0/24", "vlan": 10, "mtu": 1500, "interface": "eno1"},
        "compute": {"subnet": "10.20.0.0/24", "vlan": 20, "mtu": 9000, "interface": "enp65s0f0np0"},
        "storage": {"subnet": "10.30.0.0/24", "vlan": 30, "mtu": 9000, "interface": "enp65s0f0np0"},
    },
    "roce": {"pfc_priority": 3, "dscp": 26},
}


def test_a_sound_plan_has_no_problems():
    assert plan_problems(GOOD_PLAN) == []
    assert plan_problems({"networks": {"management": {"subnet": "172.30.100.0/24"}}}) == []


def test_every_problem_of_a_bad_plan_is_named():
    plan = {
        "fabric": "roce",
        "networks": {
            "management": {"subnet": "10.10.0.0/16", "vlan": 0, "mtu": 1500, "interface": "eno1"},
            "compute": {"subnet": "10.10.20.0/24", "vlan": 4095, "mtu": 9600, "interface": "enp65s0f0np0"},
            "storage": {"subnet": "10.30.0.0/24", "vlan": 4095, "mtu": 9000, "interface": "enp65s0f0np0"},
        },
        "roce": {"pfc_priority": 8, "dscp": 64},
    }
    assert plan_problems(plan) == [
        "gpulab_network.networks.compute.vlan must be a VLAN id from 1 to 4094; got 4095",
        "gpulab_network.networks.compute.mtu must be from 1280 to 9216 on a roce fabric; got 9600",
        "gpulab_network.networks.management.vlan must be a VLAN id from 1 to 4094; got 0",
        "gpulab_network.networks.storage.vlan must be a VLAN id from 1 to 4094; got 4095",
        "gpulab_network.networks.storage.vlan 4095 is also compute's on the same interface; give each its own",
        "gpulab_network.networks: compute (10.10.20.0/24) and management (10.10.0.0/16) overlap; "
        "give each traffic class its own subnet",
        "gpulab_network.roce.pfc_priority must be from 0 to 7; got 8",
        "gpulab_network.roce.dscp must be from 0 to 63; got 64",
    ]


def test_fabric_and_infiniband_mtu():
    assert plan_problems(dict(GOOD_PLAN, fabric="omnipath"))[0] == (
        "gpulab_network.fabric must be one of roce, infiniband, ethernet; got 'omnipath'"
    )
    ib = {"fabric": "infiniband", "networks": {"compute": {"subnet": "10.21.0.0/24", "mtu": 65520}}}
    assert plan_problems(ib) == []  # IPoIB connected mode
    assert plan_problems({"networks": {"management": {"subnet": "10.0.0.0/33"}}})[0].startswith(
        "gpulab_network.networks.management.subnet '10.0.0.0/33' is not a CIDR subnet"
    )
    assert plan_problems({"networks": {}}) == ["gpulab_network must be a mapping with a non-empty 'networks' mapping"]


def test_bond_problems_are_named():
    plan = {
        "networks": {
            "compute": {"subnet": "10.20.0.0/24", "interface": "bond0"},
            "storage": {"subnet": "10.30.0.0/24", "interface": "eno4"},
        },
        "bonds": {
            "bond0": {"interfaces": ["eno2", "eno3"], "mode": "round-robin"},
            "bond1": {"interfaces": ["eno3", "eno4"]},
            "bond2": {"interfaces": []},
        },
    }
    assert plan_problems(plan) == [
        "gpulab_network.bonds.bond0.mode must be one of 802.3ad, active-backup, balance-xor; got 'round-robin'",
        "eno3 is in both bond0 and bond1; a NIC joins one bond",
        "eno4 is in bond1 and also a network's interface; use bond1 there",
        "gpulab_network.bonds.bond2.interfaces must be a non-empty list of NIC names",
    ]
    assert plan_problems({**plan, "bonds": ["bond0"]}) == [
        "gpulab_network.bonds must map a bond name to {interfaces, mode}"
    ]


def test_gateway_and_dns_are_checked():
    plan = {
        "networks": {
            "management": {"subnet": "10.10.0.0/24", "interface": "eno1", "gateway": "10.10.1.1", "dns": "10.10.0.1"},
            "compute": {"subnet": "10.20.0.0/24", "interface": "eno2", "gateway": "router", "dns": ["10.0.0.300"]},
        },
    }
    assert plan_problems(plan) == [
        "gpulab_network.networks.compute.gateway must be an IP address; got 'router'",
        "gpulab_network.networks.compute.dns must be a list of IP addresses; got ['10.0.0.300']",
        "gpulab_network.networks.management.gateway 10.10.1.1 is outside the subnet 10.10.0.0/24",
        "gpulab_network.networks.management.dns must be a list of IP addresses; got '10.10.0.1'",
    ]
    plan["networks"]["management"].update(gateway="10.10.0.1", dns=["10.10.0.1", "2606:4700:4700::1111"])
    del plan["networks"]["compute"]
    assert plan_problems(plan) == []


def test_a_hosts_own_bonds_are_checked_under_their_variable():
    networks = {"storage": {"subnet": "10.30.0.0/24", "interface": "bond0"}}
    assert bond_problems({"bond0": {"interfaces": ["eno2"], "mode": "rr"}}, networks, "network_bonds") == [
        "network_bonds.bond0.mode must be one of 802.3ad, active-backup, balance-xor; got 'rr'"
    ]
    assert bond_problems(["eno2"], networks, "network_bonds") == [
        "network_bonds must map a bond name to {interfaces, mode}"
    ]


def test_the_role_s_settings_are_refused_all_at_once():
    networks = {"storage": {"subnet": "10.30.0.0/24", "interface": "bond0"}}
    assert network_problems({"bond0": {"interfaces": ["eno2"], "mode": "rr"}}, networks, 10) == [
        "network_bonds.bond0.mode must be one of 802.3ad, active-backup, balance-xor; got 'rr'",
        "network_rollback_seconds must be at least 30 (reconnecting takes time); got 10",
    ]
    assert network_problems(None, networks, 30) == []


def test_without_netaddr_a_filter_says_what_is_missing(monkeypatch):
    from ansible_collections.gpulab.cluster.plugins.filter import network_plan

    monkeypatch.setattr(network_plan, "netaddr", None)
    node_address_filter = network_plan.FilterModule().filters()["node_address"]
    with pytest.raises(AnsibleFilterError, match="need the Python package netaddr where Ansible runs"):
        node_address_filter(PLAN, "management", 1)
