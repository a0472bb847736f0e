"""The ray role refuses bad settings before it touches a node (no lab needed: the connection points at a Docker
socket that does not exist). A Ray that differs from the training environment's is refused on the nodes
themselves: tests/lab/test_ray.py."""

import pytest
from unreachable import run_playbook


@pytest.mark.parametrize(
    "extra_vars, message",
    [
        ({"ray_head_host": "head9"}, 'ray_head_host "head9" is not in the inventory'),
        ({"ray_worker_hosts": ["gpu1", "gpu9"]}, "ray_worker_hosts names hosts that are not in the inventory: gpu9"),
        ({"ray_worker_hosts": []}, "ray_worker_hosts is empty: a Ray cluster needs at least one worker"),
        ({"ray_object_store_fraction": 0.9}, "ray_object_store_fraction must be above 0 and at most 0.8, got 0.9"),
    ],
)
def test_bad_ray_settings_are_refused_naming_the_variable(extra_vars, message):
    run = run_playbook("playbooks/training.yml", extra_vars, "--tags", "ray")
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "Ray settings:" in output and message in output, output[-3000:]
    assert "Read what this node offers Ray" not in output  # stopped before any node was touched


def test_a_ray_setting_of_the_wrong_type_is_refused_by_the_role_spec():
    run = run_playbook("playbooks/training.yml", {"ray_port": "six"}, "--tags", "ray")
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "ray_port" in output and "Read what this node offers Ray" not in output, output[-3000:]
