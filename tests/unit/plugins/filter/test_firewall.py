"""The firewall's openings checked naming the variable, and made into the exact nftables rules per node."""

import pytest

from ansible_collections.gpulab.cluster.plugins.filter.firewall import (
    firewall_interfaces,
    firewall_problems,
    firewall_rules,
    firewall_ruleset,
    firewall_scrape_openings,
)
from ansible_collections.gpulab.cluster.plugins.filter.network_plan import host_links

PLAN = {
    "address_offset": 10,
    "networks": {
        "management": {"subnet": "172.30.10.0/24"},
        "compute": {"subnet": "10.20.0.0/24", "vlan": 20, "interface": "eth1"},
        "storage": {"subnet": "10.30.0.0/24", "vlan": 30, "interface": "eth1"},
    },
}
GROUPS = {
    "all": ["mgmt1", "storage1", "gpu1", "gpu2"],
    "management": ["mgmt1"],
    "storage": ["storage1"],
    "compute": ["gpu1", "gpu2"],
    "ungrouped": [],
}
HOSTVARS = {host: {"gpulab_node_index": index} for index, host in enumerate(GROUPS["all"], start=1)}
CEPH = {
    "name": "ceph-mon",
    "traffic_class": "storage",
    "ports": [3300, 6789],
    "to": ["storage1"],
    "from": ["compute", "storage"],
}


def test_good_openings_have_no_problem():
    openings = [
        CEPH,
        {"name": "jobs", "traffic_class": "compute", "protocol": "all", "to": ["compute"], "from": ["compute"]},
        {
            "name": "web",
            "traffic_class": "management",
            "ports": ["8000-8010"],
            "to": ["mgmt1"],
            "from": ["192.0.2.0/24", "any"],
            "enabled": False,
        },
    ]
    assert firewall_problems(openings, PLAN, GROUPS, "firewall_rules") == []


@pytest.mark.parametrize(
    ("opening", "message"),
    [
        (
            {"traffic_class": "storge"},
            "firewall_rules[0] (ceph-mon).traffic_class 'storge' is not a traffic class of gpulab_network.networks "
            "(compute, management, storage)",
        ),
        ({"ports": [3300, 70000]}, "firewall_rules[0] (ceph-mon).ports: 70000 is outside 1-65535"),
        ({"ports": ["ssh"]}, "firewall_rules[0] (ceph-mon).ports: 'ssh' is not a port or a range LOW-HIGH"),
        ({"ports": ["7000-6800"]}, "firewall_rules[0] (ceph-mon).ports: '7000-6800' runs backwards"),
        ({"ports": []}, "firewall_rules[0] (ceph-mon).ports: give at least one port (or protocol all)"),
        ({"protocol": "all"}, "firewall_rules[0] (ceph-mon): protocol all opens every port; give no ports"),
        ({"protocol": "sctp"}, "firewall_rules[0] (ceph-mon).protocol 'sctp' is not one of tcp, udp, all"),
        ({"to": ["storage9"]}, "firewall_rules[0] (ceph-mon).to: storage9 not among the inventory's groups or hosts"),
        ({"to": ["any"]}, "firewall_rules[0] (ceph-mon).to: any not among the inventory's groups or hosts"),
        (
            {"from": ["10.0.0.0/33", "gpu3"]},
            "firewall_rules[0] (ceph-mon).from: 10.0.0.0/33, gpu3 not among the inventory's groups, hosts, "
            "subnets or any",
        ),
        ({"from": []}, "firewall_rules[0] (ceph-mon).from must be a non-empty list of groups or hosts, got []"),
        ({"port": 22}, "firewall_rules[0] (ceph-mon) has unknown keys: port"),
    ],
)
def test_bad_openings_are_named(opening, message):
    assert firewall_problems([CEPH | opening], PLAN, GROUPS, "firewall_rules") == [message]


def test_an_opening_that_is_not_a_mapping_and_a_list_that_is_not_a_list():
    assert firewall_problems(["ssh"], PLAN, GROUPS, "firewall_rules") == [
        "firewall_rules[0] must be a mapping, got str"
    ]
    assert firewall_problems({}, PLAN, GROUPS, "firewall_rules") == [
        "firewall_rules must be a list of openings, got dict"
    ]


OPENINGS = [
    {"name": "ssh", "traffic_class": "management", "ports": [22], "to": ["all"], "from": ["all", "any"]},
    {"name": "slurmd", "traffic_class": "management", "ports": [6818], "to": ["compute"], "from": ["all"]},
    CEPH,
    {
        "name": "ceph-daemons",
        "traffic_class": "storage",
        "ports": ["6800-7568"],
        "to": ["storage"],
        "from": ["compute", "storage", "storage1"],
    },
    {"name": "jobs", "traffic_class": "compute", "protocol": "all", "to": ["compute"], "from": ["compute"]},
    {
        "name": "ntp",
        "traffic_class": "management",
        "protocol": "udp",
        "ports": [123],
        "to": ["management"],
        "from": ["all", "192.0.2.0/24", "2001:db8::/64"],
    },
    {"name": "off", "traffic_class": "management", "ports": [1], "to": ["all"], "from": ["any"], "enabled": False},
]


def test_each_node_opens_what_it_is_among_the_to_of_from_the_plans_addresses():
    assert firewall_rules(OPENINGS, HOSTVARS, GROUPS, "storage1", PLAN) == {
        "compute": [],
        "management": ['tcp dport { 22 } accept comment "ssh"'],
        "storage": [
            'ip saddr { 10.30.0.12, 10.30.0.13, 10.30.0.14 } tcp dport { 3300, 6789 } accept comment "ceph-mon"',
            'ip saddr { 10.30.0.12, 10.30.0.13, 10.30.0.14 } tcp dport { 6800-7568 } accept comment "ceph-daemons"',
        ],
    }
    assert firewall_rules(OPENINGS, HOSTVARS, GROUPS, "gpu1", PLAN) == {
        "compute": ['ip saddr { 10.20.0.13, 10.20.0.14 } accept comment "jobs"'],
        "management": [
            'tcp dport { 22 } accept comment "ssh"',
            "ip saddr { 172.30.10.11, 172.30.10.12, 172.30.10.13, 172.30.10.14 } tcp dport { 6818 } accept "
            'comment "slurmd"',
        ],
        "storage": [],
    }
    assert firewall_rules(OPENINGS, HOSTVARS, GROUPS, "mgmt1", PLAN)["management"][1:] == [
        "ip saddr { 192.0.2.0/24, 172.30.10.11, 172.30.10.12, 172.30.10.13, 172.30.10.14 } udp dport { 123 } accept "
        'comment "ntp"',
        'ip6 saddr { 2001:db8::/64 } udp dport { 123 } accept comment "ntp"',
    ]


def test_an_opening_on_a_class_the_plan_lacks_is_an_error_naming_it():
    with pytest.raises(Exception, match="firewall opening 'ceph-mon': traffic class 'backup'"):
        firewall_rules([CEPH | {"traffic_class": "backup"}], HOSTVARS, GROUPS, "storage1", PLAN)


def test_the_ruleset_replaces_its_own_table_and_drops_what_a_class_does_not_open():
    rules = firewall_rules(OPENINGS, HOSTVARS, GROUPS, "gpu1", PLAN)
    text = firewall_ruleset(rules, HOSTVARS, "gpu1", PLAN, {"compute": "eth1.20", "storage": "eth1.30"})
    assert text.splitlines() == [
        "table inet gpulab",
        "delete table inet gpulab",
        "table inet gpulab {",
        "\tchain input {",
        "\t\ttype filter hook input priority filter; policy accept;",
        '\t\tiif "lo" accept',
        "\t\tct state established,related accept",
        "\t\tct state invalid drop",
        '\t\tiifname "eth1.20" jump compute',
        '\t\tiifname "eth1.30" jump storage',
        "\t\tip daddr 10.20.0.13 jump compute",
        "\t\tip daddr 172.30.10.13 jump management",
        "\t\tip daddr 10.30.0.13 jump storage",
        "\t}",
        "\tchain compute {",
        "\t\ticmp type echo-request accept",
        "\t\ticmpv6 type { echo-request, nd-neighbor-solicit, nd-neighbor-advert, nd-router-advert } accept",
        '\t\tip saddr { 10.20.0.13, 10.20.0.14 } accept comment "jobs"',
        "\t\tcounter drop",
        "\t}",
        "\tchain management {",
        "\t\ticmp type echo-request accept",
        "\t\ticmpv6 type { echo-request, nd-neighbor-solicit, nd-neighbor-advert, nd-router-advert } accept",
        '\t\ttcp dport { 22 } accept comment "ssh"',
        "\t\tip saddr { 172.30.10.11, 172.30.10.12, 172.30.10.13, 172.30.10.14 } tcp dport { 6818 } accept "
        'comment "slurmd"',
        "\t\tcounter drop",
        "\t}",
        "\tchain storage {",
        "\t\ticmp type echo-request accept",
        "\t\ticmpv6 type { echo-request, nd-neighbor-solicit, nd-neighbor-advert, nd-router-advert } accept",
        "\t\tcounter drop",
        "\t}",
        "}",
    ]


def test_a_management_address_of_its_own_is_where_management_is_matched():
    hostvars = HOSTVARS | {"gpu1": {"gpulab_node_index": 3, "gpulab_address": "192.168.1.50"}}
    text = firewall_ruleset({"management": []}, hostvars, "gpu1", PLAN, table="lab")
    assert "\t\tip daddr 192.168.1.50 jump management" in text.splitlines()
    assert text.startswith("table inet lab\ndelete table inet lab\n")


def test_the_class_interfaces_are_the_links_the_network_role_configures():
    links = host_links(PLAN, 3, {}, ["compute", "storage"])
    assert firewall_interfaces(links, HOSTVARS, "gpu1", PLAN) == {"compute": "eth1.20", "storage": "eth1.30"}
    untagged = PLAN | {"networks": PLAN["networks"] | {"compute": {"subnet": "10.20.0.0/24", "interface": "ib0"}}}
    links = host_links(untagged, 3, {}, ["compute"])
    assert firewall_interfaces(links, HOSTVARS, "gpu1", untagged) == {"compute": "ib0"}
    assert firewall_interfaces([], HOSTVARS, "gpu1", PLAN) == {}


def test_extra_scrape_jobs_open_their_port_to_the_prometheus_host():
    jobs = [{"name": "dcgm", "port": 9400, "hosts": ["gpu1", "gpu2"]}]
    assert firewall_scrape_openings(jobs, "mgmt1") == [
        {
            "name": "scrape dcgm",
            "traffic_class": "management",
            "ports": [9400],
            "to": ["gpu1", "gpu2"],
            "from": ["mgmt1"],
            "enabled": True,
        }
    ]
    assert firewall_scrape_openings(jobs, "")[0]["enabled"] is False
