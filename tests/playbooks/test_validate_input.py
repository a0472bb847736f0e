"""validate.yml refuses bad settings before it touches a node (no lab needed: nothing connects)."""

import pytest
from unreachable import run_playbook


def validate(extra_vars):
    return run_playbook("playbooks/validate.yml", extra_vars)


@pytest.mark.parametrize(
    "extra_vars, message",
    [
        (
            {"validation_bench_hosts": ["gpu1", "gpu9"]},
            "validation_bench_hosts names host(s) not in the inventory: gpu9",
        ),
        ({"gpulab_gpu_count": 0}, "gpu1: gpulab_gpu_count must be a whole number of at least 1, got 0"),
        ({"validation_net_min_gbps": -1}, "validation_net_min_gbps must be greater than 0, got -1"),
        ({"validation_efficiency_healthy": -1}, "validation_efficiency_healthy must be in (0, 1], got -1"),
        ({"validation_net_min_ratio": 1.2}, "validation_net_min_ratio must be in (0, 1], got 1.2"),
        (
            {"validation_bench_hosts": ["mgmt1"]},
            "validation_bench_hosts names host(s) outside the compute group: mgmt1",
        ),
        ({"gpulab_gpu_count": 1.5}, "gpu1: gpulab_gpu_count must be a whole number of at least 1, got 1.5"),
        ({"validate_drain": True}, "validate_drain is no longer read: the setting is validation_drain now"),
        (
            {"validation_cost": {"price_per_kwh": 0.3, "base_watts": 80, "utilization": 2, "cloud_gpu_hour": 1}},
            "validation_cost.utilization is a share of the time, 0 to 1, got 2",
        ),
        ({"validation_cost": {"base_watts": 80}}, "validation_cost needs validation_cost.price_per_kwh"),
        (
            {"validation_net_line_rate_gbps": 10, "validation_bench_min_busbw_gbs": 2},
            "validation_bench_min_busbw_gbs (2 GB/s) is above what the line rate of 10 Gbit/s allows (1.25 GB/s)",
        ),
    ],
)
def test_bad_settings_are_refused_with_a_message(extra_vars, message):
    run = validate(extra_vars)
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "Validation settings: " in output, output[-3000:]
    assert message in output
    assert "Install the measurement tools" not in output  # stopped before any node was touched


def test_a_setting_of_the_wrong_type_is_refused_by_the_role_spec():
    run = validate({"validation_net_streams": "many"})
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "validation_net_streams" in output and "many" in output, output[-3000:]
    assert "Install the measurement tools" not in output


def test_the_doctor_refuses_a_tolerance_that_is_no_number_before_touching_a_node():
    run = run_playbook("playbooks/doctor.yml", {"doctor_tolerances": {"bandwidth": "fast"}})
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "validation_tolerances.bandwidth must be a number of at least 0, got 'fast'" in output, output[-3000:]
    assert "Install the measurement tools" not in output
