from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import gpu_power
from ansible_collections.gpulab.cluster.plugins.module_utils.nvidia_smi import GpuParseError, parse_power_csv

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nvidia_smi"
H200 = (FIXTURES / "query_power_h200_580.csv").read_text()
RTX4090 = (FIXTURES / "query_power_rtx4090_550.csv").read_text()
VAR = "nvidia_driver_power_limits"
GEFORCE = ("GPU-5f3b1a9e-2c44-8d1e-7f0a-1b2c3d4e5f60", "GPU-8a7c6b5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d")


def test_the_h200_reads_with_its_range():
    assert parse_power_csv(H200) == [
        {
            "index": 0,
            "uuid": "GPU-ded94e46-7efe-4fdb-05a6-107ba87d51ba",
            "limit": 700.0,
            "min": 200.0,
            "max": 700.0,
            "default": 700.0,
        }
    ]


def test_a_gpu_without_power_management_reads_as_none():
    [gpu] = parse_power_csv("0, GPU-1, [N/A], [N/A], [N/A], [N/A]\n")
    assert (gpu["limit"], gpu["min"], gpu["max"]) == (None, None, None)


@pytest.mark.parametrize("text", ["GPU 0: NVIDIA H200", "0, GPU-1, 700.00, 200.00", "0, GPU-1, 700 W, lots, 700, 700"])
def test_output_that_is_not_the_query_is_refused(text):
    with pytest.raises(GpuParseError):
        parse_power_csv(text)


def test_all_then_one_gpu_of_its_own():
    changes, problems = gpu_power.plan(parse_power_csv(RTX4090), {"all": 300, "1": 250}, VAR)
    assert problems == []
    assert changes == [
        {"index": 0, "uuid": GEFORCE[0], "from": 450.0, "to": 300.0},
        {"index": 1, "uuid": GEFORCE[1], "from": 450.0, "to": 250.0},
    ]


def test_a_uuid_entry_finds_its_gpu_and_wins_over_index_and_all():
    gpus = parse_power_csv(RTX4090)
    wanted = {GEFORCE[1]: 200, "1": 250, "all": 300}
    changes, problems = gpu_power.plan(gpus, wanted, VAR)
    assert problems == [] and [(c["index"], c["to"]) for c in changes] == [(0, 300.0), (1, 200.0)]
    # The boot unit's list: every GPU by UUID, including one whose limit is already in place.
    gpus[0]["limit"] = 300.0
    assert gpu_power.per_gpu(gpus, wanted, VAR) == [
        {"index": 0, "uuid": GEFORCE[0], "watts": 300.0},
        {"index": 1, "uuid": GEFORCE[1], "watts": 200.0},
    ]
    assert gpu_power.plan(gpus, {"GPU-0000": 200}, VAR)[1] == [
        "nvidia_driver_power_limits[GPU-0000]: this node has no GPU GPU-0000"
        f" (its GPUs: 0 ({GEFORCE[0]}), 1 ({GEFORCE[1]}))"
    ]


def test_a_limit_already_in_place_is_not_set_again():
    gpus = parse_power_csv(RTX4090)
    assert gpu_power.plan(gpus, {0: 450, 1: 450.3}, VAR) == ([], [])


def test_values_the_gpu_does_not_allow_are_refused_naming_the_variable():
    changes, problems = gpu_power.plan(parse_power_csv(H200), {"all": 150}, VAR)
    assert problems == ["nvidia_driver_power_limits[all]: 150 W is outside what GPU 0 allows (200 to 700 W)"]
    changes, problems = gpu_power.plan(parse_power_csv(H200), {0: 750, 3: 300, "1x": "lots"}, VAR)
    assert problems == [
        "nvidia_driver_power_limits[3]: this node has no GPU 3 (its GPUs: 0 (GPU-ded94e46-7efe-4fdb-05a6-107ba87d51ba))",  # noqa: E501
        "nvidia_driver_power_limits[1x] must be watts (a number), got 'lots'",
        "nvidia_driver_power_limits[0]: 750 W is outside what GPU 0 allows (200 to 700 W)",
    ]


def test_a_gpu_that_reports_no_range_cannot_be_set():
    gpus = parse_power_csv("0, GPU-1, [N/A], [N/A], [N/A], [N/A]\n")
    assert gpu_power.plan(gpus, {"all": 200}, VAR)[1] == [
        "nvidia_driver_power_limits[all]: GPU 0 reports no power limit range: its limit cannot be set"
    ]
