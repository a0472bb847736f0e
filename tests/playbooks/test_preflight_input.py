"""preflight.yml turns a malformed plan or an -e value into its usual one message (no lab needed:
every host is this machine, read only)."""

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAN = {
    "fabric": "ethernet",
    "networks": {"management": {"subnet": "172.30.10.0/24", "mtu": 1500}},
}


def preflight(*extra):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    cmd = ["ansible-playbook", "playbooks/preflight.yml", "-e", "ansible_connection=local", *extra]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False)


def test_a_typo_in_the_plan_is_named_with_the_key_meant():
    plan = {"fabric": "ethernet", "netwroks": PLAN["networks"]}
    run = preflight("-e", json.dumps({"gpulab_network": plan}))
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "Preflight found" in output, output[-3000:]
    assert "gpulab_network has an unknown key 'netwroks': did you mean 'networks'?" in output
    assert "filter plugin" not in output.lower()


def test_an_infiniband_fabric_without_a_subnet_manager_is_refused():
    run = preflight("-e", json.dumps({"gpulab_network": dict(PLAN, fabric="infiniband")}))
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "gpulab_network.fabric is infiniband but rdma_subnet_manager_hosts is empty" in output, output[-3000:]


def test_a_node_index_given_with_e_is_taken_as_its_number():
    # -e gives the string '2' to every host: they then share one address, which preflight says.
    run = preflight("-e", json.dumps({"gpulab_network": PLAN}), "-e", "gpulab_node_index=2")
    output = run.stdout + run.stderr
    assert "must be" not in output, output[-3000:]
    assert "172.30.10.12" in output and "share" in output, output[-3000:]
