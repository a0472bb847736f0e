from ansible_collections.gpulab.cluster.plugins.filter.validate import FilterModule, validate_problems

GOOD = {
    "validation_net_hosts": ["gpu1", "gpu2"],
    "validation_bench_hosts": ["gpu1", "gpu2"],
    "validation_net_min_ratio": 0.9,
    "validation_net_min_gbps": None,
    "validation_net_line_rate_gbps": 100,
    "validation_net_streams": 4,
    "validation_net_duration": 5,
    "validation_bench_global_batch": 256,
    "validation_bench_min_busbw_gbs": None,
    "validation_efficiency_healthy": 0.9,
    "validation_efficiency_acceptable": 0.7,
    "validation_fail_on": "fail",
}
HOSTS = ["mgmt1", "gpu1", "gpu2"]


def settings_with(**changes):
    """GOOD with some settings changed, named without the prefix."""
    return {**GOOD, **{f"validation_{k}": v for k, v in changes.items()}}


def test_good_settings_pass():
    assert validate_problems(GOOD, HOSTS, {"gpu1": 2, "gpu2": None}) == []


def test_unknown_host_zero_gpus_and_negative_threshold():
    settings = settings_with(bench_hosts=["gpu1", "gpu9"], net_min_gbps=-1, efficiency_acceptable=0.95)
    assert validate_problems(settings, HOSTS, {"gpu1": 0, "gpu2": "two"}) == [
        "validation_bench_hosts names host(s) not in the inventory: gpu9",
        "validation_net_min_gbps must be greater than 0, got -1",
        "validation_efficiency_acceptable (0.95) must not exceed validation_efficiency_healthy (0.9)",
        "gpu1: gpulab_gpu_count must be a whole number of at least 1, got 0; leave it unset on a node without GPUs",
        "gpu2: gpulab_gpu_count must be a whole number of at least 1, got 'two'; leave it unset on a node without GPUs",
    ]


def test_types_and_ranges():
    settings = settings_with(net_hosts="gpu1", net_min_ratio=1.5, net_streams=True, fail_on="sometimes")
    settings.update(validation_smi_timeout=0, validation_clock_offset_max_ms="soon", validation_idle_gpu_minutes=-5)
    assert validate_problems(settings, HOSTS, {"gpu1": None, "gpu2": None}) == [
        "validation_net_hosts must be a list of inventory hosts, got 'gpu1'",
        "validation_net_min_ratio must be in (0, 1], got 1.5",
        "validation_net_streams must be greater than 0, got True",
        "validation_smi_timeout must be greater than 0, got 0",
        "validation_clock_offset_max_ms must be greater than 0, got 'soon'",
        "validation_idle_gpu_minutes must be greater than 0, got -5",
        "validation_fail_on must be one of fail, warn, never, got 'sometimes'",
    ]


def test_doctor_baseline_and_tolerances():
    settings = settings_with(tolerances={"bandwidth": "a lot", "temperature": 3}, baseline=["reports/b.json"])
    assert validate_problems(settings, HOSTS, {"gpu1": None, "gpu2": None}) == [
        "validation_tolerances.bandwidth must be a number of at least 0, got 'a lot'",
        "validation_baseline must be the path of a report.json, got ['reports/b.json']",
    ]
    nowhere = settings_with(baseline_accept=True, baseline="")
    assert validate_problems(nowhere, HOSTS, {"gpu1": None, "gpu2": None}) == [
        "validation_baseline_accept needs validation_baseline: the path to record the run at"
    ]
    good = settings_with(tolerances={"bandwidth": 0.05}, baseline="reports/baseline.json", baseline_accept=True)
    assert validate_problems(good, HOSTS, {"gpu1": None, "gpu2": None}) == []


def test_thresholds_above_the_line_rate_and_benchmarks_off_the_compute_nodes():
    settings = settings_with(bench_hosts=["gpu1", "mgmt1"], net_min_gbps=120, bench_min_busbw_gbs=12.6)
    assert validate_problems(settings, HOSTS, {"gpu1": 2, "gpu2": None}) == [
        "validation_bench_hosts names host(s) outside the compute group: mgmt1",
        "validation_net_min_gbps (120 Gbit/s) is above what the line rate of 100 Gbit/s allows (100 Gbit/s): "
        "no link could pass",
        "validation_bench_min_busbw_gbs (12.6 GB/s) is above what the line rate of 100 Gbit/s allows (12.5 GB/s): "
        "no link could pass",
    ]
    good = settings_with(net_min_gbps=100, bench_min_busbw_gbs=12.5)
    assert validate_problems(good, HOSTS, {"gpu1": 2, "gpu2": None}) == []


def test_filter_reads_gpu_counts_from_hostvars():
    from ansible_collections.gpulab.cluster.plugins.filter.validate import validate_settings_problems

    hostvars = {"mgmt1": {}, "gpu1": {"gpulab_gpu_count": 0}, "gpu2": {}}
    groups = {"all": HOSTS, "compute": ["gpu1", "gpu2"]}
    assert validate_settings_problems(GOOD, hostvars, groups) == [
        "gpu1: gpulab_gpu_count must be a whole number of at least 1, got 0; leave it unset on a node without GPUs"
    ]


def test_draining_needs_a_slurm_controller():
    from ansible_collections.gpulab.cluster.plugins.filter.validate import validate_settings_problems

    hostvars = {"gpu1": {}, "gpu2": {}}
    groups = {"all": ["gpu1", "gpu2"], "compute": ["gpu1", "gpu2"]}
    drain = {**GOOD, "validation_drain": True, "validation_net_hosts": ["gpu1", "gpu2"]}
    assert validate_settings_problems(drain, hostvars, groups) == [
        "validation_drain needs a Slurm controller to drain through: set slurm_controller or put a node in the "
        "management group"
    ]
    assert validate_settings_problems({**drain, "validation_drain": False}, hostvars, groups) == []
    hostvars["gpu1"]["slurm_controller"] = "gpu1"
    assert validate_settings_problems(drain, hostvars, groups) == []


def test_results_gathered_per_host_with_missing_ones_empty():
    from ansible_collections.gpulab.cluster.plugins.filter.validate import validation_results

    gpu1 = {
        "__validation_versions": {"versions": {"driver": "580.159.04"}},
        "__validation_gpu": {"status": "pass"},
        "__validation_slurm_node": {"status": "pass"},
        "__validation_net": {"a": 1},
    }
    assert validation_results({"gpu1": gpu1, "mgmt1": {}}, ["gpu1", "mgmt1"]) == {
        "gpu1": {
            "reached": True,
            "versions": {"driver": "580.159.04"},
            "gpu": {"status": "pass"},
            "slurm": {"status": "pass"},
            "rdma": {},
            "nccl": {},
            "network": {"a": 1},
            "host": {},
        },
        "mgmt1": {
            "reached": False,
            "versions": None,
            **{section: {} for section in ("gpu", "slurm", "rdma", "nccl", "network", "host")},
        },
    }


def test_an_old_validate_setting_is_refused_with_its_new_name():
    settings = dict(GOOD, validate_drain=True, validate_net_min_gbps=5)
    assert validate_problems(settings, HOSTS, {"gpu1": 2, "gpu2": None}) == [
        "validate_drain is no longer read: the setting is validation_drain now",
        "validate_net_min_gbps is no longer read: the setting is validation_net_min_gbps now",
    ]


def test_a_setting_of_the_benchmarks_own_torch_is_refused_with_where_it_went():
    settings = dict(GOOD, validation_torch_spec="torch==2.13.0", validation_wheel_dir="/srv/wheels")
    assert validate_problems(settings, HOSTS, {"gpu1": 2, "gpu2": None}) == [
        "validation_torch_spec is no longer read: the benchmark runs with the training environment's torch; "
        "set training_versions.pytorch (or gpulab_versions.pytorch)",
        "validation_wheel_dir is no longer read: the benchmark runs with the training environment's torch; "
        "set training_wheel_dir",
    ]


def test_gate_problems_judge_one_node_as_the_report_does():
    from ansible_collections.gpulab.cluster.plugins.filter.validate import gate_problems

    gpu_fail = {
        "checks": [{"check": "gpu_count", "status": "fail", "message": "1 GPUs found via nvidia-smi, 2 expected"}]
    }
    healthy = {
        "__validation_versions": {"versions": {"driver": "550.127.05"}},
        "__validation_gpu": {"checks": [{"check": "gpu_count", "status": "pass", "message": "2 GPUs"}]},
        "__validation_rdma": {"skipped": True},
    }
    assert gate_problems({"gpu1": healthy}, "gpu1") == []
    assert gate_problems({"gpu1": {**healthy, "__validation_gpu": gpu_fail}}, "gpu1") == [
        "gpu gpu_count: 1 GPUs found via nvidia-smi, 2 expected"
    ]
    # A check that stopped with an error (no checks key) fails the gate; so does a node that read nothing.
    errored = {**healthy, "__validation_nccl": {"msg": "all_reduce_perf not found"}}
    assert gate_problems({"gpu1": errored}, "gpu1") == [
        "nccl error: the check could not complete: all_reduce_perf not found"
    ]
    assert gate_problems({"gpu1": {}}, "gpu1") == ["the node's versions could not be read (no result)"]
    # A version read that errored under failed_when: false is registered, but it reached nothing.
    unread = {**healthy, "__validation_versions": {"failed": False, "msg": "python_env not found"}}
    assert gate_problems({"gpu1": unread}, "gpu1") == ["the node's versions could not be read (python_env not found)"]


def test_cost_settings_out_of_range_are_named_and_none_is_fine():
    cost = {"price_per_kwh": 0.3, "base_watts": 120, "utilization": 0.6, "cloud_gpu_hour": 2.0}
    assert validate_problems(settings_with(cost=cost), HOSTS, {"gpu1": 2, "gpu2": 2}) == []
    assert validate_problems(settings_with(cost={}), HOSTS, {"gpu1": 2, "gpu2": 2}) == []
    bad = {**cost, "utilization": 60, "base_watts": -5}
    assert validate_problems(settings_with(cost=bad), HOSTS, {"gpu1": 2, "gpu2": 2}) == [
        "validation_cost.base_watts must be 0 or more, got -5",
        "validation_cost.utilization is a share of the time, 0 to 1, got 60",
    ]


def test_a_declared_slot_width_must_be_a_pcie_width():
    from ansible_collections.gpulab.cluster.plugins.filter.validate import pcie_width_problems

    assert pcie_width_problems({"gpu1": 8, "gpu2": None, "gpu3": "16"}) == []
    assert pcie_width_problems({"gpu1": 12, "gpu2": True, "gpu3": "x8"}) == [
        "gpu1: gpulab_gpu_pcie_width must be a PCIe link width (1, 2, 4, 8, 16, 32), got 12",
        "gpu2: gpulab_gpu_pcie_width must be a PCIe link width (1, 2, 4, 8, 16, 32), got True",
        "gpu3: gpulab_gpu_pcie_width must be a PCIe link width (1, 2, 4, 8, 16, 32), got 'x8'",
    ]


def test_a_declared_in_node_busbw_must_be_a_positive_number():
    from ansible_collections.gpulab.cluster.plugins.filter.validate import in_node_busbw_problems

    assert in_node_busbw_problems({"gpu1": 22.5, "gpu2": None, "gpu3": "180"}) == []
    assert in_node_busbw_problems({"gpu1": 0, "gpu2": "fast", "gpu3": True}) == [
        "gpu1: gpulab_nccl_in_node_busbw_gbs must be a number of GB/s above 0, got 0",
        "gpu2: gpulab_nccl_in_node_busbw_gbs must be a number of GB/s above 0, got 'fast'",
        "gpu3: gpulab_nccl_in_node_busbw_gbs must be a number of GB/s above 0, got True",
    ]


def test_in_node_nccl_tests_is_not_held_to_the_nics_line_rate():
    # In-node traffic never crosses the NIC: holding it to the line rate failed PCIe-only nodes.
    from pathlib import Path

    import yaml

    tasks = yaml.safe_load((Path(__file__).resolve().parents[4] / "roles/validation/tasks/node.yml").read_text())
    (in_node,) = [t for t in tasks if t["name"] == "Run nccl-tests inside the node"]
    args = in_node["gpulab.cluster.nccl_test"]
    assert "link_speed_gbps" not in args
    assert args["expected_busbw"] == "{{ gpulab_nccl_in_node_busbw_gbs | default(omit) }}"


def test_the_verdict_s_findings_follow_the_fail_on_level():
    blocking = FilterModule().filters()["blocking_findings"]
    findings = [{"check": "gpu_count", "status": "fail"}, {"check": "scaling", "status": "warn"}]
    assert [f["check"] for f in blocking(findings, "fail")] == ["gpu_count"]
    assert [f["check"] for f in blocking(findings, "warn")] == ["gpu_count", "scaling"]
    assert blocking(findings, "never") == []
