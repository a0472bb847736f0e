"""check_pins (the training role): a pin the configured sources do not offer is named with its
variable and what the sources have; a local build label (+cpu) counts as the pin."""

import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location(
    "check_pins", Path(__file__).resolve().parents[2] / "roles/training/files/check_pins.py"
)
check_pins = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(check_pins)

# What `pip index versions` listed on the build machine (PyPI plus the CPU wheel in PIP_FIND_LINKS).
OFFERED = {
    "torch": ["2.15.0", "2.14.1", "2.14.0", "2.13.0+cpu", "2.13.0", "2.12.1"],
    "webdataset": ["1.0.2", "0.2.111", "0.2.110", "0.2.109", "0.2.100", "0.2.99", "0.2.97"],
    "jax": [],
    "tensorflow": "ERROR: Could not fetch URL https://pypi.org/simple/tensorflow/: connection refused",
}


def test_offered_pins_pass_and_a_local_label_counts(monkeypatch):
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    assert check_pins.problems(["pytorch=torch==2.13.0", "webdataset=webdataset==1.0.2"], OFFERED.get) == []
    assert check_pins.problems(["pytorch=torch==2.13.0"], {"torch": ["2.13.0+cpu"]}.get) == []


def test_pins_not_offered_are_named_with_the_variable_and_the_sources(monkeypatch):
    monkeypatch.setenv("PIP_FIND_LINKS", "/var/cache/gpulab/wheels")
    monkeypatch.setenv("PIP_INDEX_URL", "http://mirror.lab/simple")
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    sources = "wheels in /var/cache/gpulab/wheels, index http://mirror.lab/simple"
    assert check_pins.problems(
        ["webdataset=webdataset==0.3.0", "jax=jax[cuda12]==0.10.2", "tensorflow=tensorflow==2.21.0"], OFFERED.get
    ) == [
        f"training_versions.webdataset is 0.3.0, which the configured sources ({sources}) do not offer for"
        " webdataset; they have 1.0.2, 0.2.111, 0.2.110, 0.2.109, 0.2.100 ...",
        f"training_versions.jax is 0.10.2, which the configured sources ({sources}) do not offer for"
        " jax[cuda12]; they have no jax[cuda12]",
        f"could not ask the configured sources ({sources}) about tensorflow:"
        " ERROR: Could not fetch URL https://pypi.org/simple/tensorflow/: connection refused",
    ]


def test_a_prefix_of_an_offered_version_is_not_the_pin(monkeypatch):
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    assert len(check_pins.problems(["pytorch=torch==2.13"], OFFERED.get)) == 1
    assert len(check_pins.problems(["pytorch=torch==2.1"], {"torch": ["2.13.0"]}.get)) == 1
