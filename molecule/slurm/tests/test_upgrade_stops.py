"""An upgrade step that fails (dpkg will not run, as a broken package or a full disk would leave it) keeps
the compute node drained with a reason that says where the upgrade stopped, not "in progress", and stops the
run; once fixed, a rerun upgrades the node, passes its gate and resumes it.

Runs after test_upgrade.py and test_upgrade_pins.py, on slurm-gpu3, put one tzdata behind again.
"""

import json

import pytest
from polling import wait_for
from slurm_helpers import SCENARIO, TWO_GPUS, fake_gpus, node_state

NODE = "slurm-gpu3"
HOOK = "/etc/apt/apt.conf.d/99gpulab-test-dpkg-fails"  # apt runs it before dpkg; it fails, so dpkg never runs
STOPPED_AT = "failed at 'Upgrade Debian's packages (held packages stay)': "


def upgrade(ansible_playbook):
    return ansible_playbook(
        "playbooks/upgrade.yml", "--limit", NODE, "-e", json.dumps({"validation_nccl_tests": False}),
        inventories=(SCENARIO / "add-node.yml",), timeout=900,
    )  # fmt: skip


def tzdata(host):
    return host.check_output("dpkg-query -W -f '${Version}' tzdata")


@pytest.fixture(scope="module")
def stopped(ansible_playbook, node):
    gpu3 = node(NODE)
    offered = gpu3.check_output("apt-cache madison tzdata | awk '{print $3}'").split()
    old, new = offered[-1], offered[0]
    gpu3.check_output(f"DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades tzdata={old}")
    fake_gpus(gpu3, TWO_GPUS)
    gpu3.check_output(f"""echo 'DPkg::Pre-Invoke {{"/bin/false";}};' > {HOOK}""")
    try:
        run = upgrade(ansible_playbook)
    finally:
        gpu3.check_output(f"rm -f {HOOK}")
    yield run, old, new
    gpu3.check_output("rm -f /usr/local/bin/nvidia-smi /usr/local/share/gpulab-query.csv")


def test_a_failed_step_keeps_the_node_drained_saying_where_it_stopped(ctl, node, stopped):
    run, old, _new = stopped
    assert run.returncode != 0
    assert f"The upgrade of {NODE} {STOPPED_AT}" in run.stdout, run.stdout[-3000:]
    assert "The nodes after it were not touched" in run.stdout
    state, reason = node_state(ctl, NODE)
    assert "DRAIN" in state and reason.startswith(f"gpulab: upgrade {STOPPED_AT}"), (state, reason)
    assert tzdata(node(NODE)) == old


def test_once_fixed_a_rerun_upgrades_gates_and_resumes_it(ansible_playbook, ctl, node, stopped):
    _run, _old, new = stopped
    run = upgrade(ansible_playbook)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "drained by an earlier upgrade run: the health gate decides whether it resumes" in run.stdout
    assert tzdata(node(NODE)) == new
    # Bounded by slurmctld's ping interval: the node may show idle* until its next ping answers.
    assert wait_for(lambda: node_state(ctl, NODE) == ("IDLE", ""), 200), node_state(ctl, NODE)
