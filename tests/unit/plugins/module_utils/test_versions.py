import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import versions as v

PROC_DRIVER = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
)
PROC_DRIVER_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build  (dvs-builder@U16-I3-B03-4-3)\n"
)
NVCC = (
    "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\n"
    "Built on Thu_Mar_28_02:18:24_PDT_2024\nCuda compilation tools, release 12.4, V12.4.131\n"
    "Build cuda_12.4.r12.4/compiler.34097967_0\n"
)


def test_parsers():
    assert v.parse_driver_proc(PROC_DRIVER) == "550.127.05"
    assert v.parse_driver_proc(PROC_DRIVER_OPEN) == "560.35.03"
    assert v.parse_driver_proc("") is None
    assert v.parse_nvcc(NVCC) == "12.4.131"
    assert v.parse_smi_driver("550.127.05\n550.127.05\n") == "550.127.05"
    assert v.parse_smi_driver("Failed to initialize NVML: Driver/library version mismatch\n") is None
    assert v.parse_smi_driver("") is None
    assert v.parse_smi_driver("580.159.04, 96.00.A5.00.1A\n") == "580.159.04"
    assert v.parse_slurm("slurm-wlm 22.05.8\n") == "22.05.8"
    assert v.parse_slurm("slurm 23.11.4\n") == "23.11.4"
    assert v.parse_dpkg_version("2.21.5-1+cuda12.4") == "2.21.5"
    assert v.parse_dpkg_version("1:535.216.01-1~deb12u1") == "535.216.01"
    assert v.parse_dpkg_version("") is None
    assert v.nccl_version_from_code(22105) == "2.21.5"
    assert v.nccl_version_from_code(22703) == "2.27.3"
    assert v.nccl_version_from_code(2804) == "2.8.4"  # the old encoding, before 2.9
    assert v.nccl_version_from_code(0) is None


def nodes(**overrides):
    base = {
        "os": "Debian 12",
        "kernel": "6.1.0-37-amd64",
        "driver": "550.127.05",
        "cuda": "12.4.131",
        "nccl": "2.21.5",
        "slurm": "22.05.8",
    }
    hosts = {h: dict(base) for h in ("gpu1", "gpu2", "gpu3")}
    hosts["mgmt1"] = dict(base, driver=None, cuda=None, nccl=None)
    for host, changes in overrides.items():
        hosts[host].update(changes)
    return hosts


def by_check(records):
    return {r.check: r for r in records}


def test_consistent_cluster():
    checks = by_check(v.compare(nodes()))
    assert {r.status for r in checks.values()} == {"pass"}
    assert checks["consistency.driver"].message == "3 nodes run 550.127.05 (not installed on mgmt1)"
    assert checks["consistency.kernel"].message == "4 nodes run 6.1.0-37-amd64"


def test_odd_node_is_named_with_its_version():
    checks = by_check(v.compare(nodes(gpu2={"driver": "535.216.01"}, gpu3={"kernel": "6.1.0-41-amd64"})))
    driver = checks["consistency.driver"]
    assert (driver.status, driver.code, driver.threshold) == ("fail", "VERSION_MISMATCH", "550.127.05")
    assert driver.message == "gpu2 runs 535.216.01; the others run 550.127.05"
    assert driver.value == {"gpu1": "550.127.05", "gpu2": "535.216.01", "gpu3": "550.127.05"}
    assert checks["consistency.kernel"].message == "gpu3 runs 6.1.0-41-amd64; the others run 6.1.0-37-amd64"
    assert checks["consistency.os"].status == "pass"


def test_component_nobody_has_is_unavailable():
    checks = by_check(
        v.compare(nodes(gpu1={"slurm": None}, gpu2={"slurm": None}, gpu3={"slurm": None}, mgmt1={"slurm": None}))
    )
    assert checks["consistency.slurm"].status == "unavailable"


@pytest.mark.parametrize("components", [("os",), ("driver", "nccl")])
def test_only_the_asked_components(components):
    assert [r.check for r in v.compare(nodes(), components)] == [f"consistency.{c}" for c in components]


def test_a_node_that_must_have_a_driver_and_has_none_fails():
    required = {"gpu1": ["driver"], "gpu2": ["driver"], "gpu3": ["driver"]}
    checks = by_check(v.compare(nodes(gpu3={"driver": None}), required=required))
    driver = checks["consistency.driver"]
    assert (driver.status, driver.code) == ("fail", "VERSION_MISSING")
    assert driver.message == "gpu3 reports none, though it must have one; the others run 550.127.05"
    # The management node has no driver and none is required there: still not a mismatch.
    assert "mgmt1" not in driver.message
    nobody = by_check(
        v.compare(nodes(gpu1={"driver": None}, gpu2={"driver": None}, gpu3={"driver": None}), ("driver",), required)
    )
    assert nobody["consistency.driver"].status == "fail"
    assert nobody["consistency.driver"].message.endswith("; no node reports a driver version")


def test_a_framework_no_node_has_does_not_apply_unless_required():
    versions = {"gpu1": {"pytorch": None}, "gpu2": {}}
    [record] = v.compare(versions, ("pytorch",))
    assert (record.status, record.message) == ("n/a", "no node has pytorch in its training environment")
    [record] = v.compare(versions, ("pytorch",), {"gpu1": ["pytorch"]})
    assert (record.status, record.code) == ("fail", "VERSION_MISSING")
    [record] = v.compare(versions, ("cuda",))
    assert record.status == "unavailable"  # the GPU stack's components stay "could not check"


def test_the_vbios_is_read_per_node_with_distinct_versions_in_gpu_order():
    # The H200's VBIOS as its `nvidia-smi -q -x` gave it on the lent machine (fixtures/nvidia_smi/q_x_h200_580.xml).
    assert v.parse_smi_vbios("580.159.04, 96.00.A5.00.1A\n") == "96.00.A5.00.1A"
    two = "550.127.05, 95.02.3C.40.B6\n550.127.05, 95.02.3C.40.B6\n550.127.05, 95.02.18.80.5F\n"
    assert v.parse_smi_vbios(two) == "95.02.3C.40.B6 / 95.02.18.80.5F"
    assert v.parse_smi_vbios("550.127.05, [N/A]\n") is None
    assert v.parse_smi_vbios("550.127.05\n") is None  # a stand-in that answers the driver alone
    assert v.parse_smi_vbios("") is None
