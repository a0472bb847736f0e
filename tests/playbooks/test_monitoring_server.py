"""The monitoring role's defaults put Prometheus on the one host the monitoring_server_host filter names (the
one validation asks for GPU utilization) and the Slurm collector where slurmctld runs (slurm_controller_host):
the role's defaults evaluated for every host of a small inventory (local connections, nothing runs on a node)."""

import os
import subprocess

import pytest
from unreachable import ROOT

PLAYBOOK = """
- hosts: all
  gather_facts: false
  vars_files: [{defaults}]
  tasks:
    - ansible.builtin.debug: {{msg: "SERVER {{{{ inventory_hostname }}}} {{{{ monitoring_server | bool }}}}"}}
    - ansible.builtin.debug: {{msg: "SLURM {{{{ inventory_hostname }}}} {{{{ monitoring_slurm_collector | bool }}}}"}}
"""


@pytest.mark.parametrize(
    ("settings", "servers", "slurm"),
    [
        ({}, ["mgmt1"], ["mgmt1"]),  # the first management node
        ({"mgmt1": "monitoring_server=false"}, ["mgmt2"], ["mgmt1"]),  # the next one, not none
        ({"gpu1": "monitoring_server=true"}, ["gpu1"], ["mgmt1"]),  # the one the inventory names, alone
        ({"all": "slurm_controller=mgmt2"}, ["mgmt1"], ["mgmt2"]),  # the collector follows slurmctld
    ],
)
def test_one_host_runs_prometheus_and_one_the_slurm_collector(tmp_path, settings, servers, slurm):
    hosts = {"mgmt1": "management", "mgmt2": "management", "gpu1": "compute"}
    inventory = "".join(
        f"[{group}]\n{host} ansible_connection=local {settings.get(host, '')} {settings.get('all', '')}\n"
        for host, group in hosts.items()
    )
    (tmp_path / "hosts.ini").write_text(inventory)
    (tmp_path / "play.yml").write_text(PLAYBOOK.format(defaults=ROOT / "roles/monitoring/defaults/main.yml"))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    run = subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "hosts.ini"), str(tmp_path / "play.yml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert sorted(host for host in hosts if f"SERVER {host} True" in run.stdout) == servers, run.stdout[-2000:]
    assert sorted(host for host in hosts if f"SLURM {host} True" in run.stdout) == slurm, run.stdout[-2000:]
