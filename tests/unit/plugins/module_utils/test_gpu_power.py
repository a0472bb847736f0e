from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import gpu_power
from ansible_collections.gpulab.cluster.plugins.module_utils.nvidia_smi import GpuParseError, parse_power_csv

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nvidia_smi"
H200 = (FIXTURES / "query_power_h200_580.csv").read_text()
RTX4090 = (FIXTURES / "query_power_rtx4090_550.csv").read_text()
VAR = "nvidia_driver_power_limits"


def test_the_h200_reads_with_its_range():
    assert parse_power_csv(H200) == [{"index": 0, "limit": 700.0, "min": 200.0, "max": 700.0, "default": 700.0}]


def test_a_gpu_without_power_management_reads_as_none():
    [gpu] = parse_power_csv("0, [N/A], [N/A], [N/A], [N/A]\n")
    assert (gpu["limit"], gpu["min"], gpu["max"]) == (None, None, None)


@pytest.mark.parametrize("text", ["GPU 0: NVIDIA H200", "0, 700.00, 200.00", "0, 700 W, lots, 700, 700"])
def test_output_that_is_not_the_query_is_refused(text):
    with pytest.raises(GpuParseError):
        parse_power_csv(text)


def test_all_then_one_gpu_of_its_own():
    changes, problems = gpu_power.plan(parse_power_csv(RTX4090), {"all": 300, "1": 250}, VAR)
    assert problems == []
    assert changes == [{"index": 0, "from": 450.0, "to": 300.0}, {"index": 1, "from": 450.0, "to": 250.0}]


def test_a_limit_already_in_place_is_not_set_again():
    gpus = parse_power_csv(RTX4090)
    assert gpu_power.plan(gpus, {0: 450, 1: 450.3}, VAR) == ([], [])


def test_values_the_gpu_does_not_allow_are_refused_naming_the_variable():
    changes, problems = gpu_power.plan(parse_power_csv(H200), {"all": 150}, VAR)
    assert problems == ["nvidia_driver_power_limits[all]: 150 W is outside what GPU 0 allows (200 to 700 W)"]
    changes, problems = gpu_power.plan(parse_power_csv(H200), {0: 750, 3: 300, "1x": "lots"}, VAR)
    assert problems == [
        "nvidia_driver_power_limits[3]: this node has no GPU 3 (its GPUs: 0)",
        "nvidia_driver_power_limits[1x] must be watts (a number), got 'lots'",
        "nvidia_driver_power_limits[0]: 750 W is outside what GPU 0 allows (200 to 700 W)",
    ]


def test_a_gpu_that_reports_no_range_cannot_be_set():
    gpus = parse_power_csv("0, [N/A], [N/A], [N/A], [N/A]\n")
    assert gpu_power.plan(gpus, {"all": 200}, VAR)[1] == [
        "nvidia_driver_power_limits[all]: GPU 0 reports no power limit range: its limit cannot be set"
    ]
