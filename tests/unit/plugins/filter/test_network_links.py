"""What the network role configures on a node, from the plan; and what stops it, from `ip -j -d addr show`."""

import copy
import json
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.filter.network_plan import (
    address_moves,
    host_links,
    interface_problems,
    link_mismatches,
    networkd_files,
)

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = yaml.safe_load((ROOT / "inventory/example/group_vars/all/network.yml").read_text())["gpulab_network"]
IP_LINKS = json.loads((ROOT / "tests/unit/fixtures/net/ip-j-d-addr-veth.json").read_text())


def test_roce_plan_two_vlans_on_the_fabric_nic():
    assert host_links(EXAMPLE, 3) == [
        {"name": "enp65s0f0np0", "kind": "nic", "parent": None, "vlan": None, "address": None, "mtu": 9000},
        {
            "name": "enp65s0f0np0.20",
            "kind": "vlan",
            "parent": "enp65s0f0np0",
            "vlan": 20,
            "address": "10.20.0.13/24",
            "mtu": 9000,
        },
        {
            "name": "enp65s0f0np0.30",
            "kind": "vlan",
            "parent": "enp65s0f0np0",
            "vlan": 30,
            "address": "10.30.0.13/24",
            "mtu": 9000,
        },
    ]


def test_networkd_files_a_network_file_per_link_and_a_netdev_file_per_vlan():
    links = host_links(EXAMPLE, 3)
    entries = networkd_files(links, "/etc/systemd/network")
    assert [(e["path"], e["template"], e["vars"]["__network_link"]["name"]) for e in entries] == [
        ("/etc/systemd/network/05-gpulab-enp65s0f0np0.network", "link.network.j2", "enp65s0f0np0"),
        ("/etc/systemd/network/05-gpulab-enp65s0f0np0.20.network", "link.network.j2", "enp65s0f0np0.20"),
        ("/etc/systemd/network/05-gpulab-enp65s0f0np0.30.network", "link.network.j2", "enp65s0f0np0.30"),
        ("/etc/systemd/network/05-gpulab-enp65s0f0np0.20.netdev", "link.netdev.j2", "enp65s0f0np0.20"),
        ("/etc/systemd/network/05-gpulab-enp65s0f0np0.30.netdev", "link.netdev.j2", "enp65s0f0np0.30"),
    ]
    assert {(e["owner"], e["group"], e["mode"]) for e in entries} == {("root", "root", "0644")}


def test_infiniband_plan_addresses_on_ipoib_and_a_host_override():
    plan = {
        "fabric": "infiniband",
        "networks": {
            "management": {"subnet": "10.10.0.0/24", "interface": "eno1"},
            "compute": {"subnet": "10.20.0.0/16", "mtu": 65520, "interface": "ib0"},
            "storage": {"subnet": "10.30.0.0/24", "vlan": 30, "mtu": 9000, "interface": "eno2"},
        },
    }
    links = host_links(plan, 1, interfaces={"compute": "ibp65s0"})
    assert [(link["name"], link["address"], link["mtu"]) for link in links] == [
        ("ibp65s0", "10.20.0.11/16", 65520),
        ("eno2", None, 9000),
        ("eno2.30", "10.30.0.11/24", 9000),
    ]


def test_ethernet_plan_nic_mtu_is_the_largest_riding_on_it():
    plan = {
        "networks": {
            "compute": {"subnet": "10.20.0.0/24", "vlan": 20, "mtu": 9000, "interface": "eth1"},
            "storage": {"subnet": "10.30.0.0/24", "mtu": 1500, "interface": "eth1"},
        }
    }
    nic, vlan = host_links(plan, 2)
    assert (nic["name"], nic["address"], nic["mtu"]) == ("eth1", "10.30.0.12/24", 9000)
    assert (vlan["name"], vlan["mtu"]) == ("eth1.20", 9000)


def test_management_only_when_asked():
    assert [link["name"] for link in host_links(EXAMPLE, 1, classes=["management"])] == ["eno1", "eno1.10"]


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"networks": {"compute": {"subnet": "10.20.0.0/24"}}}, "gpulab_network.networks.compute has no interface"),
        (
            {
                "networks": {
                    "compute": {"subnet": "10.20.0.0/24", "interface": "eth1"},
                    "storage": {"subnet": "10.30.0.0/24", "interface": "eth1"},
                }
            },
            "eth1 would carry two untagged networks; give storage a vlan",
        ),
    ],
)
def test_plans_that_cannot_be_built(plan, message):
    with pytest.raises(AnsibleFilterError, match=message):
        host_links(plan, 1)


def links_on(nic, mtu=9000):
    return [{"name": nic, "kind": "nic", "parent": None, "vlan": None, "address": None, "mtu": mtu}]


def test_recorded_interfaces_accept_a_jumbo_veth():
    assert interface_problems(IP_LINKS, links_on("gl1"), ["172.30.100.13"]) == []


def test_mtu_above_the_driver_maximum_is_refused():
    limited = copy.deepcopy(IP_LINKS)
    next(link for link in limited if link["ifname"] == "gl1")["max_mtu"] = 1500  # a NIC without jumbo frames
    assert interface_problems(limited, links_on("gl1"), []) == [
        "MTU 9000 on gl1 is above what its driver allows (1500); lower the plan's mtu or use a NIC that supports "
        "jumbo frames"
    ]


def test_missing_nic_and_the_connection_nic_are_refused():
    problems = interface_problems(IP_LINKS, links_on("enp65s0f0np0") + links_on("eth0", 1500), ["172.30.100.13"])
    assert problems == [
        "enp65s0f0np0 does not exist here (interfaces: eth0, gl0, gl1, lo)",
        "eth0 carries 172.30.100.13, the address Ansible uses: gpulab reconfigures it only with the management "
        "class on it (network_classes); or put the traffic classes on another NIC",
    ]


def test_links_as_planned_or_not():
    planned = links_on("gl1") + [
        {"name": "gl0", "kind": "nic", "parent": None, "vlan": None, "address": "10.20.0.11/24", "mtu": 9000},
        {"name": "gl1.20", "kind": "vlan", "parent": "gl1", "vlan": 20, "address": "10.20.0.12/24", "mtu": 9000},
    ]
    assert link_mismatches(IP_LINKS, planned[:1]) == []
    assert link_mismatches(IP_LINKS, links_on("eth0", 9000) + planned[1:]) == [
        "eth0 has MTU 1500, not 9000",
        "gl0 lacks 10.20.0.11/24 (has none)",
        "gl1.20 is missing",
    ]


BONDED = {
    "fabric": "ethernet",
    "bonds": {"bond0": {"interfaces": ["eno2", "eno3"], "mode": "802.3ad"}},
    "networks": {
        "management": {"subnet": "10.10.0.0/24", "interface": "eno1"},
        "compute": {"subnet": "10.20.0.0/24", "mtu": 9000, "interface": "eth1"},
        "storage": {"subnet": "10.30.0.0/24", "vlan": 30, "mtu": 9000, "interface": "bond0"},
    },
}


def test_a_bond_carries_its_vlan_and_its_members_follow_its_mtu():
    assert host_links(BONDED, 2) == [
        {"name": "eth1", "kind": "nic", "parent": None, "vlan": None, "address": "10.20.0.12/24", "mtu": 9000},
        {
            "name": "bond0",
            "kind": "bond",
            "parent": None,
            "vlan": None,
            "address": None,
            "mtu": 9000,
            "members": ["eno2", "eno3"],
            "mode": "802.3ad",
        },
        {"name": "eno2", "kind": "member", "parent": "bond0", "vlan": None, "address": None, "mtu": 9000},
        {"name": "eno3", "kind": "member", "parent": "bond0", "vlan": None, "address": None, "mtu": 9000},
        {"name": "bond0.30", "kind": "vlan", "parent": "bond0", "vlan": 30, "address": "10.30.0.12/24", "mtu": 9000},
    ]


def test_a_hosts_own_bond_members_win():
    links = host_links(BONDED, 1, bonds={"bond0": {"interfaces": ["enp1s0f0", "enp1s0f1"], "mode": "active-backup"}})
    assert [(link["name"], link["kind"]) for link in links if link["kind"] in ("bond", "member")] == [
        ("bond0", "bond"),
        ("enp1s0f0", "member"),
        ("enp1s0f1", "member"),
    ]
    assert links[1]["mode"] == "active-backup"


def test_bond_members_must_exist_and_join_the_bond():
    links = host_links(BONDED, 1, classes=["storage"])
    ip_links = [
        {"ifname": "eno2", "mtu": 9000, "max_mtu": 9216, "master": "bond0", "addr_info": []},
        {"ifname": "bond0", "mtu": 9000, "addr_info": []},
        {"ifname": "bond0.30", "mtu": 9000, "addr_info": [{"family": "inet", "local": "10.30.0.11", "prefixlen": 24}]},
    ]
    assert interface_problems(ip_links, links, ["10.10.0.11"]) == [
        "eno3 does not exist here (interfaces: bond0, bond0.30, eno2)"
    ]
    assert link_mismatches(ip_links, links) == ["eno3 is missing"]
    ip_links.append({"ifname": "eno3", "mtu": 9000, "addr_info": []})
    assert link_mismatches(ip_links, links) == ["eno3 is not in bond0 (master: none)"]


# Management on eth0 of the recorded container (172.30.100.13/24), as the kernel bed runs it.
MANAGED = {
    "networks": {
        "management": {"subnet": "172.30.100.0/24", "interface": "eth0", "gateway": "172.30.100.1", "dns": ["1.1.1.1"]},
        "compute": {"subnet": "10.20.0.0/24", "vlan": 20, "mtu": 9000, "interface": "gl1"},
    },
}


def test_management_link_carries_its_gateway_and_dns_and_is_marked():
    links = host_links(MANAGED, 3, classes=["management", "compute"])
    assert links[0] == {
        "name": "eth0",
        "kind": "nic",
        "parent": None,
        "vlan": None,
        "address": "172.30.100.13/24",
        "mtu": 1500,
        "gateway": "172.30.100.1",
        "dns": ["1.1.1.1"],
        "management": True,
    }
    assert "management" not in links[1] and "gateway" not in links[2]
    # The host's gpulab_address pins the management address; other classes still come from the index.
    pinned = host_links(MANAGED, 3, classes=["management", "compute"], management_address="172.30.100.50")
    assert [link["address"] for link in pinned] == ["172.30.100.50/24", None, "10.20.0.13/24"]


def test_management_on_a_vlan_marks_the_vlan_and_its_parent():
    links = host_links(EXAMPLE, 1, classes=["management"])
    assert [(link["name"], link.get("management"), link["address"]) for link in links] == [
        ("eno1", True, None),
        ("eno1.10", True, "10.10.0.11/24"),
    ]


def test_the_connection_nic_is_accepted_with_management_on_it():
    links = host_links(MANAGED, 3, classes=["management", "compute"])
    assert interface_problems(IP_LINKS, links, ["172.30.100.13"]) == []
    bonded = dict(MANAGED, bonds={"bond0": {"interfaces": ["eth0", "gl0"], "mode": "active-backup"}})
    bonded["networks"] = dict(
        MANAGED["networks"], management=dict(MANAGED["networks"]["management"], interface="bond0")
    )
    members = [link for link in host_links(bonded, 3, classes=["management"]) if link["kind"] == "member"]
    assert [(link["name"], link.get("management")) for link in members] == [("eth0", True), ("gl0", True)]
    assert interface_problems(IP_LINKS, members, ["172.30.100.13"]) == []


def test_moving_the_address_ansible_connects_to_is_refused():
    links = host_links(MANAGED, 3, classes=["management", "compute"])
    assert address_moves(links, "172.30.100.13") == []
    assert address_moves(links, "gpu3.cluster.home.arpa") == []  # a name: nothing to compare
    assert address_moves(links, "127.0.0.1") == []  # not on the management subnet (a forwarded port)
    assert address_moves(links, "172.30.100.77") == [
        "the plan gives eth0 the management address 172.30.100.13, but Ansible connects to 172.30.100.77: "
        "set gpulab_address: 172.30.100.77 to keep it (moving the address Ansible uses would cut the run off "
        "and be rolled back)"
    ]
