"""upgrade.yml's compute batch size comes from the inventory too, not only from -e (no lab needed: the nodes
cannot be reached, so each batch shows as the nodes that fail together before the rollout stops)."""

import re

import pytest
from unreachable import run_playbook


def first_batch(tmp_path, extra_vars, batch_in_group_vars):
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text("all:\n  children:\n    compute: {}\n")
    if batch_in_group_vars:
        (inventory / "group_vars" / "compute.yml").write_text(f"upgrade_batch_size: {batch_in_group_vars}\n")
    run = run_playbook(
        "playbooks/upgrade.yml", extra_vars, "-i", "inventory/lab", "-i", str(inventory), "--limit", "compute"
    )
    output = run.stdout + run.stderr
    assert run.returncode != 0
    play = output.split("PLAY [Compute nodes, one batch at a time]", 1)[1]
    return sorted(set(re.findall(r"fatal: \[(\w+)\]:", play)))


@pytest.mark.parametrize(
    "extra_vars, group_vars, batch",
    [({}, None, ["gpu1"]), ({}, 2, ["gpu1", "gpu2"]), ({"upgrade_batch_size": 1}, 2, ["gpu1"])],
)
def test_the_batch_size_is_read_from_group_vars_and_extra_vars_win(tmp_path, extra_vars, group_vars, batch):
    assert first_batch(tmp_path, extra_vars, group_vars) == batch
