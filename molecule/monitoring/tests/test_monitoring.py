"""Node exporter on every node; the GPU collector on the compute nodes, without a driver and then fed by
the pynvml stand-in with two GPUs. Metrics read back through node exporter and linted by promtool."""

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from polling import wait_for

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
A100_UUID = "GPU-8a7c6b5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d"  # the stand-in's second GPU (conftest.stand_in)
PROMTOOL = str(ROOT / ".cache" / "tools" / "promtool")
NODES = ("mon-mgmt", "mon-gpu1", "mon-gpu2")
COMPUTE = ("mon-gpu1", "mon-gpu2")
PROM_FILE = "/var/lib/prometheus/node-exporter/gpulab_gpu.prom"


def scrape(mgmt, name):
    """node exporter's page of a node, fetched over the network from the management node."""
    fetch = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())"
    return mgmt.check_output(f"python3 -c {shlex.quote(fetch)} http://{name}:9100/metrics")


def gpulab_lines(page):
    """The collector's metrics in node exporter's page (which sorts each sample's labels by name)."""
    return "\n".join(line for line in page.splitlines() if re.match(r"(# (HELP|TYPE) )?gpulab_gpu", line)) + "\n"


def promtool_check(text):
    run = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    return run.returncode, (run.stdout + run.stderr).strip()


def scrape_until(mgmt, name, line, seconds=30):
    """The node's page once it has this line (the collector runs every 2 s here), or None."""

    def page_with_line():
        page = scrape(mgmt, name)
        return page if line in page.splitlines() else None

    return wait_for(page_with_line, seconds, step=1)


@pytest.mark.parametrize("name", NODES)
def test_node_exporter_answers_from_the_management_node(scenario_host, name):
    page = scrape(scenario_host("mon-mgmt"), name)
    assert re.search(r"^node_exporter_build_info\{.*\} 1$", page, re.M)
    assert "node_textfile_scrape_error 0" in page.splitlines()


def test_management_node_runs_no_gpu_collector(scenario_host):
    mgmt = scenario_host("mon-mgmt")
    assert not mgmt.file("/etc/systemd/system/gpulab-gpu-metrics.timer").exists
    assert "gpulab_gpu" not in scrape(mgmt, "mon-mgmt")


@pytest.mark.parametrize("name", COMPUTE)
def test_without_a_driver_the_collector_says_exporter_up_0_and_why(scenario_host, name):
    page = scrape(scenario_host("mon-mgmt"), name)
    lines = gpulab_lines(page)
    assert "gpulab_gpu_exporter_up 0" in lines.splitlines(), lines
    # The real bindings, on a machine without libnvidia-ml.
    assert 'gpulab_gpu_exporter_error{reason="NVMLError_LibraryNotFound"} 1' in lines.splitlines(), lines
    assert promtool_check(lines) == (0, "")
    assert scenario_host(name).service("gpulab-gpu-metrics.timer").is_running


def test_two_stand_in_gpus_reach_node_exporter_and_pass_promtool(scenario_host, stand_in):
    mgmt = scenario_host("mon-mgmt")
    page = scrape_until(mgmt, "mon-gpu1", "gpulab_gpus 2")
    assert page, scrape(mgmt, "mon-gpu1")
    lines = gpulab_lines(page)
    assert promtool_check(lines) == (0, "")
    a100 = f'gpu="1",uuid="{A100_UUID}"'
    assert "gpulab_gpu_exporter_up 1" in lines.splitlines()
    assert f"gpulab_gpu_temperature_celsius{{{a100}}} 45" in lines.splitlines()
    assert f"gpulab_gpu_ecc_supported{{{a100}}} 1" in lines.splitlines()
    assert 'gpulab_gpu_ecc_supported{gpu="0",uuid="GPU-5f3b1a9e-2c44-8d1e-7f0a-1b2c3d4e5f60"} 0' in lines.splitlines()


def test_a_hot_gpu_shows_within_a_few_collections(scenario_host, stand_in):
    _gpu1, edit = stand_in
    edit(lambda state: state["gpus"][1].update(temperature=91, clocks_event_mask=0x40))
    a100 = f'gpu="1",uuid="{A100_UUID}"'
    hot = f"gpulab_gpu_temperature_celsius{{{a100}}} 91"
    page = scrape_until(scenario_host("mon-mgmt"), "mon-gpu1", hot)
    assert page, gpulab_lines(scrape(scenario_host("mon-mgmt"), "mon-gpu1"))
    throttled = f'gpulab_gpu_clocks_event_active{{gpu="1",reason="hw_thermal_slowdown",uuid="{A100_UUID}"}} 1'
    assert throttled in page.splitlines()


def test_the_file_is_replaced_whole_never_left_half_written(stand_in):
    gpu1, _edit = stand_in
    # Every collection renames a complete file into place: no temporary file stays behind.
    listing = gpu1.check_output("ls -A /var/lib/prometheus/node-exporter")
    assert listing.split() == ["gpulab_gpu.prom"], listing
    assert gpu1.file(PROM_FILE).mode == 0o644
