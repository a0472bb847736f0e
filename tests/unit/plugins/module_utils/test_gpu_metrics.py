import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import gpu_metrics
from ansible_collections.gpulab.cluster.plugins.module_utils import nvidia_smi as smi

ROOT = Path(__file__).resolve().parents[4]
PROMTOOL = shutil.which("promtool") or str(ROOT / ".cache" / "tools" / "promtool")


def promtool_check(text):
    run = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    return run.returncode, (run.stdout + run.stderr).strip()


def test_two_gpus_render_with_their_values_and_pass_promtool(nvml):
    gpus, _info = smi.collect_nvml(nvml())
    text = gpu_metrics.render(gpus, {("0000:c1:00", 79): 1})
    assert promtool_check(text) == (0, "")
    lines = set(text.splitlines())
    geforce = 'gpu="0",uuid="GPU-5f3b1a9e-2c44-8d1e-7f0a-1b2c3d4e5f60"'
    a100 = 'gpu="1",uuid="GPU-8a7c6b5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d"'
    assert "gpulab_gpu_exporter_up 1" in lines
    assert "gpulab_gpus 2" in lines
    assert f"gpulab_gpu_temperature_celsius{{{geforce}}} 34" in lines
    assert f"gpulab_gpu_power_draw_watts{{{a100}}} 61.23" in lines
    assert f"gpulab_gpu_power_limit_watts{{{geforce}}} 450" in lines
    assert f"gpulab_gpu_sm_clock_hertz{{{a100}}} 1410000000" in lines
    assert f"gpulab_gpu_memory_used_bytes{{{a100}}} 444596224" in lines
    assert f'gpulab_gpu_clocks_event_active{{{geforce},reason="gpu_idle"}} 1' in lines
    assert f'gpulab_gpu_clocks_event_active{{{a100},reason="hw_thermal_slowdown"}} 0' in lines
    assert 'gpulab_gpu_xid_events_total{bus_id="0000:c1:00",xid="79"} 1' in lines
    # ECC: the GeForce has none, which is a flag of 0 and no error counts (not a count of 0).
    assert f"gpulab_gpu_ecc_supported{{{geforce}}} 0" in lines
    assert f"gpulab_gpu_ecc_supported{{{a100}}} 1" in lines
    assert f"gpulab_gpu_ecc_corrected_volatile_errors{{{a100}}} 5" in lines
    assert not any(line.startswith("gpulab_gpu_ecc_corrected_volatile_errors{" + geforce) for line in lines)
    assert not any(line.startswith("gpulab_gpu_remap_pending{" + geforce) for line in lines)
    assert f"gpulab_gpu_remap_pending{{{a100}}} 0" in lines
    assert f"gpulab_gpu_remapped_rows_correctable{{{a100}}} 2" in lines
    # Busy, fan and energy: the A100 is idle (0, not left out) and has no fan (left out, not 0).
    assert f"gpulab_gpu_utilization_ratio{{{geforce}}} 0.87" in lines
    assert f"gpulab_gpu_utilization_ratio{{{a100}}} 0" in lines
    assert f"gpulab_gpu_memory_utilization_ratio{{{geforce}}} 0.41" in lines
    assert f"gpulab_gpu_fan_speed_ratio{{{geforce}}} 0.45" in lines
    assert not any(line.startswith("gpulab_gpu_fan_speed_ratio{" + a100) for line in lines)
    assert f"gpulab_gpu_energy_joules_total{{{geforce}}} 81234.57" in lines
    assert f"gpulab_gpu_energy_joules_total{{{a100}}} 5023" in lines


def test_a_hot_throttling_gpu_shows_in_its_own_series(nvml):
    def hot(state):
        state["gpus"][1].update(temperature=91, clocks_event_mask=0x40 | 0x20)

    gpus, _info = smi.collect_nvml(nvml(hot))
    text = gpu_metrics.render(gpus)
    a100 = 'gpu="1",uuid="GPU-8a7c6b5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d"'
    assert f"gpulab_gpu_temperature_celsius{{{a100}}} 91" in text.splitlines()
    assert f'gpulab_gpu_clocks_event_active{{{a100},reason="hw_thermal_slowdown"}} 1' in text.splitlines()
    assert f'gpulab_gpu_clocks_event_active{{{a100},reason="sw_thermal_slowdown"}} 1' in text.splitlines()


def test_no_driver_is_exporter_up_0_with_the_reason_never_a_crash(nvml):
    module = nvml(lambda state: state.update(init_error="LibraryNotFound"))
    with pytest.raises(module.NVMLError) as caught:
        smi.collect_nvml(module)
    text = gpu_metrics.render(None, error=type(caught.value).__name__)
    assert promtool_check(text) == (0, "")
    assert text.splitlines()[2] == "gpulab_gpu_exporter_up 0"
    assert 'gpulab_gpu_exporter_error{reason="NVMLError_LibraryNotFound"} 1' in text.splitlines()
    assert "gpulab_gpu_temperature_celsius" not in text


def test_label_values_are_escaped():
    gpus = [{"index": 0, "uuid": 'GPU-"x"\\y', "name": "a\nb", "temperature": 1.5}]
    text = gpu_metrics.render(gpus)
    assert 'gpulab_gpu_temperature_celsius{gpu="0",uuid="GPU-\\"x\\"\\\\y"} 1.5' in text.splitlines()
    assert 'name="a\\nb"' in text


def test_xid_totals_add_up_across_collections():
    log = (
        "[  101.2] NVRM: Xid (PCI:0000:c1:00): 79, pid=0, GPU has fallen off the bus.\n"
        "[  101.9] NVRM: Xid (PCI:0000:c1:00): 79, pid=0, GPU has fallen off the bus.\n"
        "[  205.0] NVRM: Xid (PCI:0000:41:00): 13, pid=4242, Graphics Exception\n"
    )
    totals = gpu_metrics.count_xids({("0000:c1:00", 79): 3}, smi.parse_xids(log))
    assert totals == {("0000:c1:00", 79): 5, ("0000:41:00", 13): 1}


def test_xid_series_start_at_zero_under_the_kernels_bus_id_and_rise_from_there(nvml):
    # increase() sees an event only as a rise from an earlier sample: the first Xid 79 must turn a 0 into 1
    # in the very series the kernel line names (its bus id written as the kernel writes it).
    gpus, _info = smi.collect_nvml(nvml())
    first = gpu_metrics.xid_series(gpus, {}, gpu_metrics.count_xids({}, []))
    assert len(first) == 2 * len(smi.HARDWARE_XIDS) and set(first.values()) == {0}
    assert first[("0000:c1:00", 79)] == 0 and first[("0000:41:00", 48)] == 0
    assert ("0000:41:00", 13) not in first  # application XIDs appear once counted
    totals = gpu_metrics.count_xids(first, smi.parse_xids("NVRM: Xid (PCI:0000:c1:00): 79, pid=0, off the bus."))
    second = gpu_metrics.xid_series(gpus, first, totals)
    assert {key: count for key, count in second.items() if count} == {("0000:c1:00", 79): 1}
    # A kind no collection has written: at 0 first, its count from the next collection on.
    totals = gpu_metrics.count_xids(second, smi.parse_xids("NVRM: Xid (PCI:0000:41:00): 13, pid=7, app"))
    third = gpu_metrics.xid_series(gpus, second, totals)
    assert third[("0000:41:00", 13)] == 0
    assert gpu_metrics.xid_series(gpus, third, totals)[("0000:41:00", 13)] == 1
    text = gpu_metrics.render(gpus, second)
    assert promtool_check(text) == (0, "")
    assert 'gpulab_gpu_xid_events_total{bus_id="0000:c1:00",xid="79"} 1' in text.splitlines()


def test_kernel_bus_id_from_nvml_bus_id():
    assert smi.kernel_bus_id("00000000:C1:00.0") == "0000:c1:00"
    assert smi.kernel_bus_id("0000:3B:00.0") == "0000:3b:00"
    assert smi.kernel_bus_id("00000001:0A:1F.0") == "0001:0a:1f"
