from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import nvidia_smi as smi
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import overall

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nvidia_smi"


def read(name):
    return (FIXTURES / name).read_text()


def by_check(records):
    return {r.check: r for r in records}


def test_query_fields_new_and_old_names():
    assert "pcie.link.gen.gpucurrent" in smi.query_fields()
    assert "clocks_event_reasons.active" in smi.query_fields()
    old = smi.query_fields(old_names=True)
    assert "pcie.link.gen.current" in old and "clocks_throttle_reasons.active" in old
    assert len(old.split(",")) == len(smi.QUERY_FIELDS) == 20


def test_csv_geforce_with_na_fields():
    gpus = smi.parse_query_csv(read("query_rtx4090_550.csv"))
    assert len(gpus) == 2
    assert gpus[0] == {
        "index": 0,
        "uuid": "GPU-5f3b1a9e-2c44-8d1e-7f0a-1b2c3d4e5f60",
        "name": "NVIDIA GeForce RTX 4090",
        "bus_id": "00000000:41:00.0",
        "driver_version": "550.127.05",
        "persistence_mode": True,
        "temperature": 34.0,
        "power_draw": 21.47,
        "power_limit": 450.0,
        "pcie_gen": 1,
        "pcie_gen_max": 4,
        "pcie_width": 16,
        "pcie_width_max": 16,
        "throttle_mask": 1,
        "ecc_uncorrected_volatile": None,
        "ecc_uncorrected_aggregate": None,
        "ecc_corrected_volatile": None,
        "ecc_supported": False,
        "retired_pending": None,
        "retired_sbe": None,
        "retired_dbe": None,
    }


def test_geforce_is_healthy_and_ecc_does_not_apply():
    gpus = smi.parse_query_csv(read("query_rtx4090_550.csv"))
    checks = by_check(
        smi.evaluate(
            gpus,
            source="nvidia-smi",
            expected_count=2,
            limits=smi.Limits(expected_model="RTX 4090", driver_version="550"),
        )
    )
    assert checks["gpu_count"].status == "pass"
    assert checks["gpu0.ecc_uncorrected"].status == "n/a"
    assert checks["gpu0.ecc_uncorrected"].message == "no ECC on this GPU, or ECC turned off (NVIDIA GeForce RTX 4090)"
    assert checks["gpu1.driver"].status == "pass"
    assert checks["gpu0.throttle"].message == "no slowdown (gpu_idle)"
    # Idle GPUs drop to PCIe gen 1: generation is judged only when asked (under load).
    assert "gpu0.pcie_gen" not in checks
    assert {r.status for r in checks.values()} == {"pass", "n/a"}
    assert overall(list(checks.values())) == "pass"


@pytest.mark.parametrize(
    ("cell", "status"),
    [("[Not Supported]", "n/a"), ("[Unknown Error]", "unavailable"), ("[Insufficient Permissions]", "unavailable")],
)
def test_ecc_that_could_not_be_read_is_unavailable_not_absent(cell, status):
    line = read("query_rtx4090_550.csv").splitlines()[0]
    cells = line.split(", ")
    cells[14] = cell  # ecc.errors.uncorrected.volatile.total
    (gpu,) = smi.parse_query_csv(", ".join(cells))
    assert by_check(smi.evaluate([gpu], source="nvidia-smi"))["gpu0.ecc_uncorrected"].status == status


def test_declared_gpus_that_cannot_be_read_fail():
    reason = "nvidia-smi exited 9: the NVIDIA driver is not loaded"
    (count,) = smi.evaluate(None, source="nvidia-smi", expected_count=4, unavailable_reason=reason)
    assert (count.check, count.status, count.code, count.value, count.threshold) == (
        "gpu_count",
        "fail",
        "GPU_MISSING",
        0,
        4,
    )
    assert count.message == f"4 GPUs declared, none could be read: {reason}"
    (driver,) = smi.evaluate(
        None, source="nvidia-smi", limits=smi.Limits(driver_version="550"), unavailable_reason=reason
    )
    assert (driver.check, driver.status, driver.code) == ("driver", "fail", "DRIVER_MISSING")


def test_csv_recorded_h200_580():
    """Recorded on a lent H200: the CSV and the remapped-rows query agree with the XML."""
    gpus = smi.parse_query_csv(read("query_h200_580.csv"))
    smi.merge_remapped_rows(gpus, smi.parse_remapped_rows_csv(read("remapped_rows_h200_580.csv")))
    (gpu,) = gpus
    assert (gpu["name"], gpu["driver_version"], gpu["throttle_mask"]) == ("NVIDIA H200", "580.159.04", 0x1)
    assert (gpu["power_draw"], gpu["power_limit"], gpu["pcie_gen"], gpu["pcie_width"]) == (78.5, 700.0, 5, 16)
    assert (gpu["retired_pending"], gpu["retired_sbe"], gpu["remap_pending"]) == (None, None, False)
    checks = by_check(
        smi.evaluate(gpus, source="nvidia-smi", expected_count=1, limits=smi.Limits(driver_version="580"))
    )
    assert {c.status for c in checks.values()} == {"pass"}
    assert checks["gpu0.driver"].message == "driver 580.159.04"
    wrong = by_check(smi.evaluate(gpus, source="nvidia-smi", expected_count=2, limits=smi.Limits(driver_version="550")))
    assert (wrong["gpu_count"].status, wrong["gpu0.driver"].status) == ("fail", "fail")


def test_csv_old_driver_faults():
    gpus = smi.parse_query_csv(read("query_a100_470_old_names.csv"))
    smi.merge_remapped_rows(gpus, smi.parse_remapped_rows_csv(read("remapped_rows_yes_no.csv")))
    checks = by_check(
        smi.evaluate(gpus, source="nvidia-smi", expected_count=8, limits=smi.Limits(driver_version="535"))
    )
    assert checks["gpu_count"].message == "4 GPUs found via nvidia-smi, 8 expected"
    assert checks["gpu0.driver"].message == "driver 470.199.02, pinned 535"
    assert checks["gpu0.ecc_uncorrected"].status == "pass"
    assert (checks["gpu1.ecc_uncorrected"].status, checks["gpu1.ecc_uncorrected"].value) == ("fail", 2)
    assert checks["gpu1.ecc_corrected"].status == "pass"  # 40211 < 2e7
    assert checks["gpu1.row_remap"].code == "ROW_REMAP_PENDING"
    assert checks["gpu3.row_remap"].message == "600 uncorrectable remapped rows"
    assert checks["gpu1.throttle"].message == "no slowdown (sw_power_cap)"
    assert checks["gpu2.throttle"].message == "hardware slowdown active: hw_slowdown, hw_thermal_slowdown"
    assert checks["gpu2.pcie_width"].message == "PCIe link x8, capable of x16: reseat or check the slot"
    assert checks["gpu2.persistence"].status == "warn"
    # No slowdown threshold in CSV: the absolute limit applies.
    assert checks["gpu2.temperature"].message == "86 C above 85 C"
    assert checks["gpu2.power"].status == "pass"


def test_remapped_rows_one_zero_spelling():
    rows = smi.parse_remapped_rows_csv(read("remapped_rows_1_0.csv"))
    assert rows["00000000:0F:00.0"] == {
        "remap_correctable": 0,
        "remap_uncorrectable": 0,
        "remap_pending": False,
        "remap_failure": True,
    }
    gpus = [{"index": 1, "bus_id": "00000000:0f:00.0"}]
    smi.merge_remapped_rows(gpus, rows)
    assert by_check(smi.evaluate(gpus, source="nvidia-smi"))["gpu1.row_remap"].code == "ROW_REMAP_FAILURE"


def test_xml_current_generation():
    gpus, info = smi.parse_query_xml(read("q_x_h100_550.xml"))
    assert info == {"driver_version": "550.127.05", "cuda_version": "12.4"}
    (gpu,) = gpus
    assert (gpu["name"], gpu["bus_id"], gpu["index"]) == ("NVIDIA H100 80GB HBM3", "00000000:18:00.0", 0)
    assert (gpu["pcie_width"], gpu["pcie_width_max"], gpu["pcie_gen"]) == (16, 16, 5)
    assert (gpu["temperature"], gpu["temperature_slowdown"]) == (84.0, 87.0)
    assert (gpu["power_draw"], gpu["power_limit"]) == (689.95, 700.0)
    assert (gpu["ecc_corrected_volatile"], gpu["ecc_uncorrected_volatile"]) == (7, 0)
    assert gpu["throttle_mask"] == 0x4 and gpu["remap_pending"] is False and gpu["retired_sbe"] is None
    checks = by_check(smi.evaluate(gpus, source="nvidia-smi -q -x", limits=smi.Limits(check_pcie_gen=True)))
    assert checks["gpu0.temperature"].message == "84 C is within 5 C of slowdown at 87 C"
    assert checks["gpu0.temperature"].status == "warn"
    assert checks["gpu0.pcie_gen"].status == "pass"
    assert checks["gpu0.row_remap"].status == "pass"


def test_xml_recorded_h200_580():
    """Recorded on a lent H200 (driver 580): average/instant power and T.Limit temperatures."""
    gpus, info = smi.parse_query_xml(read("q_x_h200_580.xml"))
    assert info == {"driver_version": "580.159.04", "cuda_version": "13.0"}
    (gpu,) = gpus
    assert (gpu["name"], gpu["bus_id"], gpu["index"]) == ("NVIDIA H200", "00000000:00:06.0", 0)
    assert (gpu["pcie_gen"], gpu["pcie_gen_max"], gpu["pcie_width"]) == (5, 5, 16)
    assert (gpu["temperature"], gpu["temperature_slowdown"]) == (33.0, 89.0)  # NVML said 89 too
    assert (gpu["power_draw"], gpu["power_limit"]) == (78.66, 700.0)
    assert (gpu["ecc_corrected_volatile"], gpu["ecc_uncorrected_aggregate"]) == (0, 0)
    assert gpu["throttle_mask"] == 0x1 and gpu["persistence_mode"] is True
    assert (gpu["remap_pending"], gpu["remap_failure"], gpu["retired_sbe"]) == (False, False, None)
    checks = by_check(
        smi.evaluate(gpus, source="nvidia-smi -q -x", expected_count=1, limits=smi.Limits(expected_model="H200"))
    )
    assert {c.status for c in checks.values()} == {"pass"}
    assert checks["gpu0.temperature"].message == "33 C, slowdown at 89 C"
    assert checks["gpu0.power"].message == "78.66 W of 700 W"


def test_xml_older_generation():
    gpus, info = smi.parse_query_xml(read("q_x_v100_470.xml"))
    assert info["driver_version"] == "470.199.02" and len(gpus) == 2
    first, second = gpus
    assert first["throttle_mask"] == 0x1 and first["persistence_mode"] is False
    assert (first["ecc_uncorrected_volatile"], first["ecc_corrected_volatile"]) == (1, 3)
    assert (first["retired_sbe"], first["retired_dbe"], first["retired_pending"]) == (2, 1, True)
    assert first["remap_pending"] is None  # pre-Ampere: no row remapping
    assert (first["power_draw"], first["power_limit"]) == (44.12, 300.0)
    checks = by_check(
        smi.evaluate(gpus, source="nvidia-smi -q -x", limits=smi.Limits(check_pcie_gen=True, require_persistence=False))
    )
    assert checks["gpu0.retired_pages"].code == "RETIRED_PENDING"
    assert checks["gpu1.retired_pages"].status == "pass"
    assert checks["gpu1.pcie_gen"].message == "PCIe gen 1 under load, capable of 3"
    assert "gpu0.row_remap" not in checks
    assert "gpu0.persistence" not in checks


def test_nvlink_status():
    assert smi.parse_nvlink_status("") == {}
    ok = smi.parse_nvlink_status(read("nvlink_status_ok.txt"))
    assert ok == {0: {"links": 3, "inactive": []}, 1: {"links": 3, "inactive": []}}
    down = smi.parse_nvlink_status(read("nvlink_status_down.txt"))
    checks = by_check(smi.evaluate([], source="nvidia-smi", nvlink=down))
    assert checks["gpu0.nvlink"].message == "NVLink links [1] inactive"
    assert checks["gpu1.nvlink"].message == "NVLink all links inactive"
    assert by_check(smi.evaluate([], source="x", nvlink={}))["nvlink"].message == "no NVLink on this node"


def test_xids_application_errors_are_not_faults():
    xids = smi.parse_xids(read("kern_xid.log"))
    assert [(x["bus"], x["code"]) for x in xids] == [("0000:41:00", 13), ("0000:41:00", 43), ("0000:c1:00", 79)]
    assert xids[2]["detail"] == "pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    check = by_check(smi.evaluate([], source="x", xids=xids))["xid"]
    assert (check.status, check.value, check.code) == ("fail", 1, "GPU_XID")
    assert check.message.startswith("1 hardware XID event(s), codes [79]; last: 2026-11-30T10:02:44")
    only_app = by_check(smi.evaluate([], source="x", xids=xids[:2]))["xid"]
    assert only_app.status == "pass"
    assert only_app.message == "no hardware XID errors in the kernel log (application XIDs [13, 43] ignored)"


def test_unreadable_gpus_are_unavailable():
    (check,) = smi.evaluate(None, source="nvidia-smi", unavailable_reason="nvidia-smi: the NVIDIA driver is not loaded")
    assert (check.check, check.status, check.message) == (
        "gpu_query",
        "unavailable",
        "nvidia-smi: the NVIDIA driver is not loaded: nothing to check, and no GPU declared here",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0, GPU-1, NVIDIA X\n", "expected 20 comma-separated fields, got 3"),
        (read("query_rtx4090_550.csv").replace(", Enabled,", ", Maybe,", 1), "unexpected value 'Maybe'"),
    ],
)
def test_garbage_csv(text, message):
    with pytest.raises(smi.GpuParseError, match=message):
        smi.parse_query_csv(text)


@pytest.mark.parametrize(("text", "message"), [("<html>", "does not parse"), ("<foo/>", "expected <nvidia_smi_log>")])
def test_garbage_xml(text, message):
    with pytest.raises(smi.GpuParseError, match=message):
        smi.parse_query_xml(text)


def test_nvml_collector(nvml):
    module = nvml(lambda state: state["gpus"][1].update(remap=[2, 0, 1, 0]))  # the A100: a remap pending
    gpus, info = smi.collect_nvml(module)
    assert module._state == {}  # shut down again
    assert info == {"driver_version": "550.127.05"}
    geforce, a100 = gpus
    assert (a100["name"], a100["bus_id"], a100["power_draw"], a100["power_limit"]) == (
        "NVIDIA A100-PCIE-40GB",
        "00000000:C1:00.0",
        61.23,
        250.0,
    )
    assert (a100["temperature"], a100["temperature_slowdown"], a100["throttle_mask"]) == (45.0, 88.0, 0)
    assert (a100["clock_sm"], a100["memory_used"], a100["memory_total"]) == (1410, 444596224, 42949672960)
    assert a100["remap_pending"] is True
    checks = by_check(smi.evaluate(gpus, source="nvml", expected_count=2))
    assert checks["gpu1.row_remap"].code == "ROW_REMAP_PENDING"
    assert checks["gpu1.ecc_corrected"].value == 5
    # The GeForce: NVML says NotSupported for ECC and remapping, which is n/a, not a failure.
    assert (geforce["ecc_supported"], geforce["ecc_uncorrected_volatile"]) == (False, None)
    assert "remap_pending" not in geforce
    assert checks["gpu0.ecc_uncorrected"].status == "n/a"
    # Memory with processes (the GeForce: a job and the display server) or little of it (the A100) passes.
    assert (geforce["processes"], a100["processes"]) == (2, 0)
    assert [checks[f"gpu{i}.memory_held"].status for i in (0, 1)] == ["pass", "pass"]


def test_gpu_memory_held_with_no_process_warns(nvml):
    def leak(state):  # the A100 holds 30 GiB and lists no process: a job died and left it
        state["gpus"][1]["memory"]["used"] = 30 * 2**30

    gpus, _info = smi.collect_nvml(nvml(leak))
    held = by_check(smi.evaluate(gpus, source="nvml"))["gpu1.memory_held"]
    assert (held.status, held.code, held.value, held.threshold) == ("warn", "GPU_MEMORY_HELD", 30720, 1024)
    limits = smi.Limits(memory_held_max_mib=40000)
    assert by_check(smi.evaluate(gpus, source="nvml", limits=limits))["gpu1.memory_held"].status == "pass"


def test_xml_memory_and_processes_recorded_h200_580():
    gpus, _info = smi.parse_query_xml(read("q_x_h200_580.xml"))
    assert (gpus[0]["memory_used"], gpus[0]["memory_total"], gpus[0]["processes"]) == (0, 143771 * 2**20, 0)


BUS_DROPS = """\
2026-11-30T10:02:44+0000 gpu1 kernel: NVRM: GPU at PCI:0000:c1:00: GPU-8a7c6b5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d
2026-11-30T10:02:44+0000 gpu1 kernel: NVRM: GPU 0000:c1:00.0: GPU has fallen off the bus.
2026-11-30T10:02:45+0000 gpu1 kernel: NVRM: The NVIDIA GPU 0000:C1:00.0 (PCI ID: 10de:20f1) installed in this system \
has fallen off the bus and is not responding to commands.
"""


def test_a_gpu_fallen_off_the_bus_without_an_xid_fails():
    drops = smi.parse_bus_drops(BUS_DROPS)
    assert [d["bus"] for d in drops] == ["0000:c1:00", "0000:c1:00"]
    assert smi.parse_xids(BUS_DROPS) == []  # no Xid line: the XID check alone would pass
    checks = by_check(smi.evaluate([], source="nvidia-smi csv", bus_drops=drops))
    assert (checks["gpu_bus"].status, checks["gpu_bus"].code) == ("fail", "GPU_FELL_OFF_BUS")
    assert "0000:c1:00" in checks["gpu_bus"].message and "not responding" in checks["gpu_bus"].message
    # Also when the driver no longer answers at all, and not at all when the log is clean.
    unread = by_check(smi.evaluate(None, source="none", bus_drops=drops, unavailable_reason="NVML: Unknown Error"))
    assert unread["gpu_bus"].status == "fail"
    assert by_check(smi.evaluate([], source="nvml", bus_drops=[]))["gpu_bus"].status == "pass"
    assert [d["bus"] for d in smi.parse_bus_drops(read("kern_xid.log"))] == ["0000:c1:00"]  # the Xid 79 line


def test_every_nvidia_gpu_on_the_pci_bus_is_one_the_driver_lists():
    # sysfs: the H200 recorded on a lent machine, a GPU's audio function and an NVSwitch (not GPUs), a NIC.
    devices = [
        ("0000:00:06.0", "0x10de\n", "0x030200\n"),
        ("0000:41:00.0", "0x10de", "0x030000"),
        ("0000:41:00.1", "0x10de", "0x040300"),
        ("0000:05:00.0", "0x10de", "0x068000"),
        ("0000:3b:00.0", "0x15b3", "0x020000"),
    ]
    pci = smi.nvidia_pci_gpus(devices)
    assert pci == ["0000:00:06", "0000:41:00"]
    h200 = smi.parse_query_csv(read("query_h200_580.csv"))
    lost = by_check(smi.evaluate(h200, source="nvidia-smi csv", pci_gpus=pci))["gpu_pci"]
    assert (lost.status, lost.code, lost.value, lost.threshold) == ("fail", "GPU_NOT_IN_DRIVER", 2, 1)
    assert "0000:41:00" in lost.message and "0000:00:06" not in lost.message
    ok = by_check(smi.evaluate(h200, source="nvidia-smi csv", pci_gpus=pci[:1]))["gpu_pci"]
    assert (ok.status, ok.value) == ("pass", 1)
    hidden = by_check(smi.evaluate(h200, source="nvidia-smi csv", pci_gpus=[]))["gpu_pci"]
    assert hidden.status == "unavailable"
    # The driver lists none, the bus shows two: not "no GPU here".
    none = by_check(smi.evaluate([], source="nvidia-smi csv", pci_gpus=pci))["gpu_pci"]
    assert (none.status, none.value, none.threshold) == ("fail", 2, 0)
    unread = smi.evaluate(None, source="none", pci_gpus=pci, unavailable_reason="nvidia-smi is not installed")
    assert "2 NVIDIA GPU(s) on the PCI bus: 0000:00:06, 0000:41:00" in unread[0].message


def test_a_declared_slot_width_is_what_the_link_is_held_to():
    # Two GPUs at x8/x8 on a consumer board: healthy when the slot says x8, downtrained only below it.
    x8 = {"index": 0, "name": "NVIDIA GeForce RTX 4090", "pcie_width": 8, "pcie_width_max": 16}
    undeclared = by_check(smi.evaluate([x8], source="nvml"))["gpu0.pcie_width"]
    assert (undeclared.status, undeclared.code) == ("fail", "PCIE_DOWNTRAINED")
    slot = by_check(smi.evaluate([x8], source="nvml", limits=smi.Limits(pcie_width=8)))["gpu0.pcie_width"]
    assert (slot.status, slot.value, slot.threshold) == ("pass", 8, 8)
    assert slot.message == "PCIe x8 (the slot gives x8; the GPU could do x16)"
    x4 = dict(x8, pcie_width=4)
    low = by_check(smi.evaluate([x4], source="nvml", limits=smi.Limits(pcie_width=8)))["gpu0.pcie_width"]
    assert (low.status, low.threshold, low.message) == (
        "fail",
        8,
        "PCIe link x4, the slot gives x8: reseat or check the slot",
    )
    # A slot wider than the card holds the card to its own maximum.
    wide = by_check(smi.evaluate([dict(x8, pcie_width_max=8)], source="nvml", limits=smi.Limits(pcie_width=16)))
    assert (wide["gpu0.pcie_width"].status, wide["gpu0.pcie_width"].threshold) == ("pass", 8)


def test_power_limits_are_held_to_what_the_inventory_asks_by_index_or_uuid():
    gpus = smi.parse_query_csv(read("query_rtx4090_550.csv"))  # both GPUs at their 450 W default
    # GPU 1 by UUID: the index the driver gives it may change with a reboot.
    wanted = {"all": 450, "GPU-8a7c6b5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d": 300}
    checks = by_check(smi.evaluate(gpus, source="nvidia-smi", limits=smi.Limits(power_limits=wanted)))
    ok, reset = checks["gpu0.power_limit"], checks["gpu1.power_limit"]
    assert (ok.status, ok.value, ok.threshold, ok.message) == (
        "pass",
        450.0,
        450.0,
        "450 W as nvidia_driver_power_limits[all] asks",
    )
    assert (reset.status, reset.code, reset.value, reset.threshold) == ("fail", "GPU_POWER_LIMIT", 450.0, 300.0)
    assert reset.message.startswith(
        "450 W where nvidia_driver_power_limits[GPU-8a7c6b5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d] asks 300 W:"
        " gpulab-gpu-power.service did not set it at boot"
    )
    # A GPU the inventory names and the node does not have fails; no limits declared checks nothing.
    missing = by_check(smi.evaluate(gpus, source="nvidia-smi", limits=smi.Limits(power_limits={"2": 300})))
    assert missing["power_limits"].status == "fail"
    assert missing["power_limits"].message.startswith("nvidia_driver_power_limits[2]: this node has no GPU 2")
    assert not [c for c in smi.evaluate(gpus, source="nvidia-smi") if "power_limit" in c.check]


def test_nvml_memory_leaves_the_drivers_reserved_part_out(nvml):
    """The first version of NVML's call counts the reserved memory as used (615 MiB on an idle H200 where
    nvidia-smi shows 0 MiB); the second reports it apart. Bindings without the second fall back."""
    module = nvml()
    gpus, _info = smi.collect_nvml(module)
    assert gpus[1]["memory_used"] == 444596224  # not + the 616 MiB reserved
    del module.nvmlMemory_v2
    gpus, _info = smi.collect_nvml(module)
    assert gpus[1]["memory_used"] == 444596224 + 646184960


def test_memory_and_compute_processes_recorded_on_the_h200():
    """The CSV source's two further queries as a lent H200 answered them: idle, and while a process held
    1 GiB (torch's context adds the rest). Idle memory with that process's listing gone is memory held."""
    idle, busy = read("memory_h200_580.csv"), read("memory_busy_h200_580.csv")
    apps = read("compute_apps_busy_h200_580.csv")
    cases = {"idle": (idle, ""), "busy": (busy, apps), "left behind": (busy, "")}
    found = {}
    for name, (memory, processes) in cases.items():
        gpus = smi.parse_query_csv(read("query_h200_580.csv"))
        smi.merge_memory(gpus, memory, processes)
        held = by_check(smi.evaluate(gpus, source="nvidia-smi csv"))["gpu0.memory_held"]
        found[name] = (gpus[0]["processes"], held.value, held.status)
    assert found == {"idle": (0, 0, "pass"), "busy": (1, 1643, "pass"), "left behind": (0, 1643, "warn")}
    assert gpus[0]["memory_total"] == 143771 * 2**20
    # A stand-in that answers every --query-gpu with the main query's lines: no memory check, no crash.
    gpus = smi.parse_query_csv(read("query_h200_580.csv"))
    smi.merge_memory(gpus, read("query_h200_580.csv"), "")
    assert "processes" not in gpus[0] and "gpu0.memory_held" not in by_check(smi.evaluate(gpus, source="csv"))


def test_the_kernel_log_and_pci_bus_recorded_on_the_h200():
    log = read("dmesg_h200_580.txt")
    assert "NVRM: loading NVIDIA UNIX Open Kernel Module" in log
    assert smi.parse_bus_drops(log) == [] and smi.parse_xids(log) == []
    name, pci_class, _device = read("pci_h200_580.txt").split()
    assert smi.nvidia_pci_gpus([(name, "0x10de", pci_class)]) == ["0000:00:06"]
