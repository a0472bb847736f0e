"""The benchmark worker's reading of the GPUs under load (roles/validation/files/collective_bench.py), with a
stand-in nvidia-smi: the worker runs in the training environment's torch, which the unit tests do not have, so
torch is stubbed for the import; the sampler itself runs for real (a thread, subprocesses)."""

import importlib.util
import sys
import time
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "roles" / "validation" / "files" / "collective_bench.py"

# Two readings of an H200 node with two GPUs (the fields of LOAD_QUERY and the mask, as --format=csv,noheader,
# nounits prints them): GPU 1 warms up and slows down, its link drops to gen 4, power brake in the second.
READINGS = [
    "0, 61, 1980, 1980, 5, 5, 16, 0x0000000000000000\n1, 63, 1980, 1980, 5, 5, 16, 0x0000000000000004\n",
    "0, 66, 1965, 1980, 5, 5, 16, 0x0000000000000004\n1, 74, 1755, 1980, 4, 5, 16, 0x0000000000000080\n",
]


@pytest.fixture(scope="module")
def worker():
    stubs = {name: types.ModuleType(name) for name in ("torch", "torch.distributed", "torch.nn")}
    stubs["torch"].distributed, stubs["torch"].nn = stubs["torch.distributed"], stubs["torch.nn"]
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        spec = importlib.util.spec_from_file_location("collective_bench_worker", WORKER)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name)
            else:
                sys.modules[name] = old
    return module


def test_readings_fold_into_the_hottest_slowest_and_narrowest_per_gpu(worker):
    gpus = {}
    for reading in READINGS:
        for line in reading.splitlines():
            worker.merge_sample(gpus, line)
    assert gpus[1] == {
        "index": 1,
        "samples": 2,
        "temperature_max": 74,
        "sm_clock_min": 1755,
        "sm_clock_max": 1980,
        "pcie_gen_min": 4,
        "pcie_gen_max": 5,
        "pcie_width_min": 16,
        "event_mask": 0x84,
    }
    assert (gpus[0]["temperature_max"], gpus[0]["sm_clock_min"], gpus[0]["event_mask"]) == (66, 1965, 0x4)


def test_a_value_nvidia_smi_cannot_give_is_left_out(worker):
    gpus = {}
    worker.merge_sample(gpus, "0, 45, 2520, 3105, 4, 4, 16, [N/A]")
    worker.merge_sample(gpus, "0, [N/A], 2505, 3105, [N/A], 4, 16, 0x0000000000000001")
    assert gpus[0]["temperature_max"] == 45 and gpus[0]["pcie_gen_min"] == 4 and gpus[0]["event_mask"] == 1


def stand_in(tmp_path, body):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + body)
    smi.chmod(0o755)
    return str(smi)


def test_the_sampler_reads_during_the_load_and_falls_back_to_the_old_field_name(worker, tmp_path):
    """A driver before 535 knows clocks_throttle_reasons.active only: the first query fails, the second answers."""
    (tmp_path / "0").write_text(READINGS[0])
    (tmp_path / "1").write_text(READINGS[1])
    smi = stand_in(
        tmp_path,
        f'case "$*" in *clocks_event_reasons*) echo \'Field "clocks_event_reasons.active" is not a valid field\'; '
        f"exit 2 ;; esac\nn=$(ls {tmp_path}/calls.* 2>/dev/null | wc -l); touch {tmp_path}/calls.$n\n"
        f"cat {tmp_path}/$(( n > 1 ? 1 : n ))\n",
    )
    deadline = time.monotonic() + 10
    with worker.LoadSampler(every=0.05, smi=smi) as sampler:
        while len(list(tmp_path.glob("calls.*"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)  # the load: the sampler reads the GPUs meanwhile
    report = sampler.report()
    assert report["error"] is None
    assert [(g["index"], g["temperature_max"], g["sm_clock_min"], g["pcie_gen_min"]) for g in report["gpus"]] == [
        (0, 66, 1965, 5),
        (1, 74, 1755, 4),
    ]
    assert report["gpus"][0]["samples"] >= 3


def test_a_phase_shorter_than_the_interval_is_read_once_at_its_end(worker, tmp_path):
    smi = stand_in(tmp_path, f"printf '{READINGS[0].strip()}\\n'\n")
    with worker.LoadSampler(every=60, smi=smi) as sampler:
        pass
    assert [g["samples"] for g in sampler.report()["gpus"]] == [1, 1]


def test_an_nvidia_smi_that_fails_is_the_report_s_error(worker, tmp_path):
    smi = stand_in(tmp_path, "echo 'Failed to initialize NVML: Driver/library version mismatch'; exit 18\n")
    with worker.LoadSampler(every=60, smi=smi) as sampler:
        pass
    report = sampler.report()
    assert report["gpus"] == []
    assert report["error"] == "nvidia-smi exited 18: Failed to initialize NVML: Driver/library version mismatch"
