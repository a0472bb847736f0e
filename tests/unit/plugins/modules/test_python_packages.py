"""gpulab.cluster.python_packages against a real virtualenv's Python (made without pip, with one distribution's
metadata in its site-packages): pip needed only where a requirement is not met or only pip can judge it."""

import subprocess
import sys

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import pip_status
from ansible_collections.gpulab.cluster.plugins.modules import python_packages


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A virtualenv holding nvidia-nccl-cu12 2.21.5 (its dist-info, as pip leaves it); -> (path, site-packages)."""
    path = tmp_path_factory.mktemp("nccl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = next(path.glob("lib/python3*/site-packages"))
    info = site / "nvidia_nccl_cu12-2.21.5.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-nccl-cu12\nVersion: 2.21.5\n")
    return path, site


def judge(run_module, name, virtualenv):
    result, failed = run_module(python_packages.main, {"name": name, "virtualenv": str(virtualenv)})
    assert not failed, result
    return result


def test_met_requirements_need_no_pip_and_report_the_site_packages(run_module, venv):
    path, site = venv
    wheel = "/srv/wheels/nvidia_nccl_cu12-2.21.5-py3-none-manylinux2014_x86_64.whl"
    for name in (["nvidia-nccl-cu12==2.21.5"], ["NVIDIA_NCCL_CU12"], [wheel]):
        result = judge(run_module, name, path)
        assert (result["needs_pip"], result["missing"], result["why"]) == (False, [], "every requirement met"), name
        assert result["site_packages"] == str(site) and result["installed"] == {"nvidia-nccl-cu12": "2.21.5"}


def test_another_pin_or_a_missing_package_needs_pip(run_module, venv):
    result = judge(run_module, ["nvidia-nccl-cu12==2.23.4", "nvidia-ml-py==12.560.30"], venv[0])
    assert result["needs_pip"] and result["missing"] == ["nvidia-nccl-cu12==2.23.4", "nvidia-ml-py==12.560.30"]
    assert result["why"] == "to install: nvidia-nccl-cu12==2.23.4, nvidia-ml-py==12.560.30"


def test_what_only_pip_can_judge_goes_to_pip(run_module, venv):
    for name in (["nvidia-nccl-cu12>=2.21"], ["torch[cpu]==2.13.0"], ["https://example.org/x.tar.gz"]):
        result = judge(run_module, name, venv[0])
        assert (result["needs_pip"], result["missing"], result["why"]) == (True, [], "requirements only pip can judge")


def test_no_virtualenv_yet_needs_pip(run_module, tmp_path):
    result = judge(run_module, ["nvidia-ml-py==12.560.30"], tmp_path / "none")
    assert (result["needs_pip"], result["installed"], result["site_packages"]) == (True, {}, "")


def test_names_compare_as_pip_compares_them():
    assert pip_status.parse("Nvidia_NCCL.cu12==2.21.5") == ("nvidia-nccl-cu12", "2.21.5")
    assert pip_status.parse("deepspeed") == ("deepspeed", None)
    assert pip_status.parse("/w/deepspeed-0.19.8-cp311-cp311-linux_x86_64.whl") == ("deepspeed", "0.19.8")
    assert pip_status.parse("torch>=2") is None
