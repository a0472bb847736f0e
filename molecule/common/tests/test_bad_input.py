"""Wrong variables are refused before anything changes, with a message naming the variable."""

import json
from pathlib import Path

import pytest

SCENARIO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("extra_vars", "expected"),
    [
        ({"common_chrony_clock_control": "sometimes"}, "common_chrony_clock_control"),
        ({"common_cpu_governor": "turbo"}, "common_cpu_governor"),
        ({"common_memlock_unlimited": "maybe"}, "common_memlock_unlimited"),
        ({"common_ntp_local_stratum": 16}, "common_ntp_local_stratum must be between 1 and 15, got 16"),
        ({"gpulab_network": {"fabric": "roce"}}, "networks"),
        ({"gpulab_network": {"networks": {"management": {"subnet": "10.0.0.0/24"}}, "fabric": "token-ring"}}, "fabric"),
    ],
)
def test_bad_variables_are_refused(ansible_playbook, extra_vars, expected):
    run = ansible_playbook(str(SCENARIO / "bad_input.yml"), "--check", "-e", json.dumps(extra_vars))
    assert run.returncode == 2, run.stdout[-2000:]
    assert expected in run.stdout
    # Refused at validation: no task of the role ran.
    assert "Install base packages" not in run.stdout
