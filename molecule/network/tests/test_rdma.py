"""What the rdma role installs and writes for a RoCE, an InfiniBand and an Ethernet plan."""

import os
from pathlib import Path


def test_roce_node_gets_the_qos_script_and_a_boot_unit(scenario_host):
    roce = scenario_host("net-roce")
    script = roce.file("/usr/local/sbin/gpulab-rdma-qos")
    assert script.mode == 0o755
    lines = script.content_string.splitlines()
    assert "dcb pfc set dev gl0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off" in lines
    assert "dcb app replace dev gl0 dscp-prio 26:3" in lines
    assert 'echo 106 > "$cm/ports/1/default_roce_tos"' in lines
    roce.check_output("sh -n /usr/local/sbin/gpulab-rdma-qos")  # valid shell
    unit = roce.service("gpulab-rdma-qos")
    assert unit.is_enabled and not unit.is_running  # a container has no RDMA of its own: not run
    for tool in ("ib_write_bw", "ibv_devinfo", "rdma", "dcb"):
        assert roce.exists(tool), tool


def test_infiniband_node_runs_the_subnet_manager_config(scenario_host):
    ib = scenario_host("net-ib")
    assert ib.file("/etc/opensm/opensm.conf").content_string.splitlines()[-1] == "sm_priority 14"
    assert ib.service("opensm").is_enabled
    assert not ib.file("/usr/local/sbin/gpulab-rdma-qos").exists


def test_ethernet_node_gets_no_rdma(scenario_host):
    eth = scenario_host("net-eth")
    assert eth.run("dpkg -s perftest").rc != 0
    assert not eth.file("/etc/systemd/system/gpulab-rdma-qos.service").exists


def test_switch_checklist_from_the_same_plan(ansible_playbook):
    # One plan per cluster: here the RoCE node's (each test node has its own plan).
    run = ansible_playbook("playbooks/network.yml", "--tags", "rdma", "--limit", "net-roce")
    assert run.returncode == 0, run.stdout[-2000:]
    checklist = Path(os.environ["MOLECULE_INVENTORY_FILE"]).parent / "switch-checklist.md"
    text = checklist.read_text()
    assert "- [ ] DSCP 26 -> priority/traffic class 3 (the hosts send RDMA with ToS 106)." in text
    assert "- [ ] PFC enabled on priority 3 only, on every port to a node and between switches." in text
    assert "- [ ] compute: 10.20.0.0/24, VLAN 20 tagged on the nodes'" in text
    assert "switch port MTU at least 9022" in text
