"""The firewall role refuses bad openings before it touches a node (no lab needed: the connection points at a
Docker socket that does not exist). The lab inventory enables the firewall."""

import pytest
from unreachable import run_playbook

GOOD = {"name": "web", "traffic_class": "management", "ports": [8080], "to": ["mgmt1"], "from": ["compute"]}


@pytest.mark.parametrize(
    "rule, message",
    [
        (
            {"traffic_class": "backup"},
            "firewall_rules[0] (web).traffic_class 'backup' is not a traffic class of gpulab_network.networks "
            "(compute, management, storage)",
        ),
        ({"ports": [8080, 80800]}, "firewall_rules[0] (web).ports: 80800 is outside 1-65535"),
        ({"ports": ["http"]}, "firewall_rules[0] (web).ports: 'http' is not a port or a range LOW-HIGH"),
        (
            {"from": ["gpu9"]},
            "firewall_rules[0] (web).from: gpu9 not among the inventory's groups, hosts, subnets or any",
        ),
    ],
)
def test_bad_firewall_rules_are_refused_naming_the_variable(rule, message):
    run = run_playbook("playbooks/network.yml", {"firewall_rules": [GOOD | rule]}, "--tags", "firewall")
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "Firewall settings:" in output and message in output, output[-3000:]
    assert "Install nftables" not in output  # nothing touched


def test_a_firewall_setting_of_the_wrong_type_is_refused_by_the_role_spec():
    run = run_playbook("playbooks/network.yml", {"firewall_rules": [GOOD | {"protocol": "sctp"}]}, "--tags", "firewall")
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "firewall_rules" in output and "protocol" in output and "Install nftables" not in output, output[-3000:]
