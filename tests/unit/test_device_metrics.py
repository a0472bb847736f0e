"""tests/device/gpu_metrics.py (run on a lent GPU) against the pynvml stand-in: the metrics it writes pass
promtool, and the NVML calls the GeForce does not answer are the ones recorded."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROMTOOL = shutil.which("promtool") or str(ROOT / ".cache" / "tools" / "promtool")


def run(tmp_path, stand_in):
    env = dict(
        os.environ,
        PYTHONPATH=f"{ROOT / 'tests' / 'stand_ins'}:{ROOT / '.collections'}",
        GPULAB_NVML_STAND_IN=str(stand_in),
    )
    cmd = [sys.executable, str(ROOT / "tests" / "device" / "gpu_metrics.py"), str(tmp_path)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_stand_in_s_gpus_give_metrics_that_pass_promtool_and_the_unanswered_calls(tmp_path):
    done = run(tmp_path, ROOT / "tests" / "stand_ins" / "nvml-two-gpus.json")
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "nvml_errors.json").read_text())
    assert record["gpus"] == ["NVIDIA GeForce RTX 4090", "NVIDIA A100-PCIE-40GB"]
    # The GeForce has no ECC and no row remapping, the A100 (passively cooled) no fan: NVML says NotSupported,
    # and nothing else fails.
    assert record["nvml_errors"] == {
        "nvmlDeviceGetEccMode": "NVMLError_NotSupported",
        "nvmlDeviceGetFanSpeed": "NVMLError_NotSupported",
        "nvmlDeviceGetRemappedRows": "NVMLError_NotSupported",
        "nvmlDeviceGetTotalEccErrors": "NVMLError_NotSupported",
    }
    metrics = (tmp_path / "gpulab_gpu.prom").read_text()
    assert "gpulab_gpu_exporter_up 1" in metrics
    check = subprocess.run([PROMTOOL, "check", "metrics"], input=metrics, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_nvml_that_cannot_be_read_is_an_exit_of_1_with_the_reason(tmp_path):
    stand_in = tmp_path / "no-driver.json"
    stand_in.write_text(json.dumps({"init_error": "DriverNotLoaded", "gpus": []}))
    done = run(tmp_path, stand_in)
    assert done.returncode == 1
    assert "NVML cannot be read: NVMLError_DriverNotLoaded" in done.stderr
    assert not (tmp_path / "gpulab_gpu.prom").exists()
