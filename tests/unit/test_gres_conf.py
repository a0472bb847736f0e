"""gres.conf (the slurm role's template) from what node_state found: AutoDetect=nvml only where this slurmd
has the NVML plugin, the devices listed where it has not, nothing where the node declares no GPUs."""

from pathlib import Path

import pytest
from role_templates import render

TEMPLATE = Path(__file__).resolve().parents[2] / "roles/slurm/templates/gres.conf.j2"
PLUGIN = "/usr/lib/x86_64-linux-gnu/slurm-wlm/gpu_nvml.so"


def gres(gpus, plugin_found, autodetect="auto"):
    return render(
        TEMPLATE,
        __slurm_gpu_count=gpus,
        slurm_gres_autodetect=autodetect,
        __slurm_nvml_plugin=PLUGIN,
        __slurm_state={"paths": {PLUGIN: "root:root 0644" if plugin_found else None}},
    )


@pytest.mark.parametrize(("plugin_found", "autodetect"), [(True, "auto"), (False, "auto"), (True, "off")])
def test_autodetect_only_where_the_plugin_is_and_asked_for(plugin_found, autodetect):
    text = gres(2, plugin_found, autodetect)
    assert ("AutoDetect=nvml" in text) == (plugin_found and autodetect == "auto")
    assert "Name=gpu File=/dev/nvidia[0-1]" in text


def test_without_the_plugin_the_comment_names_where_it_was_looked_for():
    assert f"No NVML plugin in this slurmd ({PLUGIN})" in gres(1, False)
    assert "Name=gpu File=/dev/nvidia0" in gres(1, False)


def test_autodetect_off_says_so():
    assert "slurm_gres_autodetect is off: devices listed here." in gres(2, True, "off")


def test_no_gpus_no_gres():
    text = gres(0, True)
    assert "Name=gpu" not in text and "AutoDetect" not in text
