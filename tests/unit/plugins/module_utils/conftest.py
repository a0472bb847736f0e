"""The pynvml stand-in (tests/stand_ins) for the tests of the NVML readers."""

import importlib.util
import json
from pathlib import Path

import pytest

STAND_INS = Path(__file__).resolve().parents[4] / "tests" / "stand_ins"


@pytest.fixture
def nvml(monkeypatch, tmp_path):
    """nvml(change) -> the pynvml stand-in answering for two GPUs (a GeForce without ECC, an A100 with
    it), after change(state) edited them."""
    spec = importlib.util.spec_from_file_location("pynvml_stand_in", STAND_INS / "pynvml.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    state = json.loads((STAND_INS / "nvml-two-gpus.json").read_text())
    path = tmp_path / "nvml.json"
    monkeypatch.setenv("GPULAB_NVML_STAND_IN", str(path))

    def edit(change=lambda s: None):
        change(state)
        path.write_text(json.dumps(state))
        return module

    return edit
