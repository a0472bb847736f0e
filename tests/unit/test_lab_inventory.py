"""The lab inventory's SSH addresses are the plan's: playbooks/lab.yml gives each container its management
address from the plan, and Ansible connects to ansible_host."""

from pathlib import Path

import yaml

from ansible_collections.gpulab.cluster.plugins.filter.network_plan import node_address

LAB = Path(__file__).resolve().parents[2] / "inventory" / "lab"


def lab_hosts():
    groups = yaml.safe_load((LAB / "hosts.yml").read_text())["all"]["children"]
    return {name: host for group in groups.values() for name, host in group["hosts"].items()}


def test_every_lab_node_is_reached_at_its_management_address_in_the_plan():
    plan = yaml.safe_load((LAB / "group_vars" / "all" / "network.yml").read_text())["gpulab_network"]
    hosts = lab_hosts()
    assert sorted(hosts) == ["gpu1", "gpu2", "mgmt1", "storage1"]
    for name, host in hosts.items():
        assert host["ansible_host"] == node_address(plan, "management", host["gpulab_node_index"]), name
