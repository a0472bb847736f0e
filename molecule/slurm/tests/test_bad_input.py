"""Bad Slurm input is refused before anything is installed, with a message naming it."""

import json
from pathlib import Path

import pytest

SCENARIO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("extra_vars", "expected"),
    [
        (
            {"slurm_partitions": [{"name": "gpu", "nodes": ["slurm-gpu1", "slurm-gpu9"]}]},
            "slurm_partitions 'gpu' names node(s) not in the compute group: slurm-gpu9",
        ),
        ({"gpulab_gpu_count": 0}, "slurm-gpu1: gpulab_gpu_count must be a whole number of at least 1, got 0"),
        ({"slurm_munge_key_source": "vault"}, "slurm_munge_key is empty while slurm_munge_key_source is 'vault'"),
        ({"slurm_munge_key_source": "keyring"}, "slurm_munge_key_source"),
        (
            {
                "slurm_preemption": True,
                "slurm_partitions": [{"name": "gpu", "options": {"AllowQos": "normal,express"}}],
            },
            "slurm_partitions 'gpu' AllowQos names QOS not defined in slurm_qos, slurm_preemption_tiers "
            "(or Slurm's normal): express",
        ),
        (
            {"slurm_preemption": True, "slurm_preemption_tiers": [{"name": "scavenger", "grace_time": "2m"}]},
            "slurm_preemption_tiers[0] 'scavenger': grace_time must be a whole number of seconds, got '2m'",
        ),
        (
            {"slurm_preemption": True, "slurm_config": {"AccountingStorageType": "accounting_storage/none"}},
            "slurm_preemption needs Slurm accounting (its QOS live in slurmdbd), but slurm_config sets "
            "AccountingStorageType=accounting_storage/none",
        ),
    ],
)
def test_bad_input_is_refused(ansible_playbook, extra_vars, expected):
    run = ansible_playbook(str(SCENARIO / "bad_input.yml"), "--check", "-e", json.dumps(extra_vars))
    assert run.returncode == 2, run.stdout[-2000:]
    assert expected in run.stdout
    assert "Install Slurm packages" not in run.stdout
