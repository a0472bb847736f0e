"""Preflight must stop site.yml before any change, naming every offending host and the fix."""

import json
import subprocess
from pathlib import Path

import pytest

FAULTS = Path(__file__).resolve().parents[1] / "faults.yml"


@pytest.fixture(scope="module")
def broken_run(ansible_playbook):
    return ansible_playbook("site.yml", inventories=(FAULTS,))


EXPECTED = [
    "Preflight found 7 problem(s); nothing was changed:",
    "pf-gpu2: in the compute group but no NVIDIA GPU is on its PCI bus; seat the GPU, move the host out of compute, "
    "or set nvidia_driver_require_gpu: false",
    "pf-nopy: no python3 on the host; install it (apt-get install python3) and rerun",
    "pf-spare: in none of the node groups (management, compute, storage); add it to at least one",
    "pf-gpu2: Debian 11 is not supported; install one of: Ubuntu 22.04, Ubuntu 24.04, Debian 12",
    "pf-gpu2: runs Debian 11 while the other nodes run Debian 12; install the same OS release on every node",
    "pf-gpu1, pf-spare: share the address 172.30.100.12; give each host its own gpulab_node_index (or gpulab_address)",
    "pf-gpu1, pf-gpu2: share the hostname 'pf-gpu1'; give every node its own hostname",
]


def test_site_fails_in_preflight(broken_run):
    assert broken_run.returncode == 2, broken_run.stdout[-3000:]


@pytest.mark.parametrize("line", EXPECTED)
def test_every_problem_is_named(broken_run, line):
    assert line in broken_run.stdout, broken_run.stdout[-3000:]


def test_one_failure_for_the_whole_cluster(broken_run):
    assert broken_run.stdout.count("FAILED! =>") == 1


def test_nothing_after_preflight_ran(broken_run):
    assert "gpulab.cluster.common" not in broken_run.stdout
    # Still no chrony anywhere: the base stage never started.
    probe = subprocess.run(["docker", "exec", "pf-mgmt", "test", "-e", "/etc/chrony"], check=False)
    assert probe.returncode == 1


def test_healthy_subset_passes(ansible_playbook):
    run = ansible_playbook("playbooks/preflight.yml", "--limit", "pf-mgmt,pf-gpu1", inventories=(FAULTS,))
    assert run.returncode == 0, run.stdout[-3000:]
    assert "Preflight found" not in run.stdout


def test_a_bad_network_plan_is_refused_before_any_change(ansible_playbook):
    plan = {
        "fabric": "roce",
        "networks": {
            "management": {"subnet": "172.30.100.0/24", "vlan": 10},
            "compute": {"subnet": "172.30.100.128/25", "vlan": 5000, "mtu": 9600},
        },
        "roce": {"pfc_priority": 9},
    }
    run = ansible_playbook(
        "playbooks/preflight.yml", "--limit", "pf-mgmt,pf-gpu1", "-e", json.dumps({"gpulab_network": plan})
    )
    assert run.returncode == 2, run.stdout[-3000:]
    for line in (
        "Preflight found 4 problem(s); nothing was changed:",
        "gpulab_network.networks.compute.vlan must be a VLAN id from 1 to 4094; got 5000",
        "gpulab_network.networks.compute.mtu must be from 1280 to 9216 on a roce fabric; got 9600",
        "gpulab_network.networks: compute (172.30.100.128/25) and management (172.30.100.0/24) overlap; "
        "give each traffic class its own subnet",
        "gpulab_network.roce.pfc_priority must be from 0 to 7; got 9",
    ):
        assert line in run.stdout, run.stdout[-3000:]
