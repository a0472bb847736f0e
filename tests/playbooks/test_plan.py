"""playbooks/plan.yml on the example inventory's hardware list: it needs no node, shows every finding and the
sums, and fails on what the plan cannot hold or on a plan it cannot size, naming the setting."""

import json
import os
import subprocess

import yaml
from unreachable import ROOT


def plan(*extra):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    cmd = ["ansible-playbook", "-i", str(ROOT / "inventory" / "example"), str(ROOT / "playbooks" / "plan.yml"), *extra]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_the_example_plan_holds_and_shows_its_warnings():
    run = plan()
    assert run.returncode == 0, run.stdout[-3000:]
    # The desktop CPU's 28 lanes for two GPUs and a NIC, and the storage node's 100GbE card in a gen 3 x8 slot.
    assert "warn gpu.pcie_lanes 52 PCIe lanes wanted" in run.stdout
    assert "warn stor1.nic_slot a PCIe gen 3 x8 slot carries 63 Gb/s" in run.stdout
    assert "pass circuit.rack_a 2670 W at 230 V draws 11.6 A on a 16 A breaker" in run.stdout
    assert '"break_even_months": 15.2' in run.stdout


def test_the_same_nodes_on_a_120_v_circuit_fail(tmp_path):
    example = yaml.safe_load((ROOT / "inventory/example/group_vars/all/plan.yml").read_text())
    example["gpulab_plan"]["circuits"]["rack_a"]["volts"] = 120
    (tmp_path / "plan.json").write_text(json.dumps(example))
    run = plan("-e", f"@{tmp_path / 'plan.json'}")
    assert run.returncode == 2, run.stdout[-3000:]
    assert "The plan fails: circuit.rack_a: 2670 W at 120 V draws 22.2 A on a 16 A breaker" in run.stdout


def test_a_gpu_the_table_lacks_is_refused_naming_it(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"gpulab_plan": {"nodes": {"gpu": {"gpu": {"model": "rtx9999", "count": 2}}}}}))
    run = plan("-e", f"@{bad}")
    assert run.returncode == 2
    assert "plan.nodes.gpu.gpu.model 'rtx9999' is not in the planner's table" in run.stdout


def test_a_node_entry_naming_no_inventory_group_is_refused_naming_it(tmp_path):
    example = yaml.safe_load((ROOT / "inventory/example/group_vars/all/plan.yml").read_text())
    example["gpulab_plan"]["nodes"]["gpu"]["hosts"] = "gpus"
    (tmp_path / "plan.json").write_text(json.dumps(example))
    run = plan("-e", f"@{tmp_path / 'plan.json'}")
    assert run.returncode == 2
    assert "gpulab_plan.nodes.gpu.hosts 'gpus' is neither a group nor a host of the inventory" in run.stdout
