"""What the inventory declares and cannot be found fails: gpu2 declared with two GPUs in a lab without any.

validate.yml must fail naming gpu2, drain it in Slurm with a gpulab: reason, show it failing in the report,
and resume it once the declaration is gone and validation passes.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from pngread import banner_rows, png_rows

ROOT = Path(__file__).resolve().parents[2]


def validate(tmp_path, name, *inventories):
    report_dir = tmp_path / name
    settings = {"validation_drain": True, "validation_report_dir": str(report_dir)}
    cmd = ["ansible-playbook", "playbooks/validate.yml", "--skip-tags", "validate_long", "-e", json.dumps(settings)]
    for inventory in inventories:
        cmd += ["-i", str(inventory)]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    report = json.loads((report_dir / "latest" / "report.json").read_text())
    return run, report, report_dir / "latest"


def node_state(name):
    line = subprocess.run(
        ["docker", "exec", "mgmt1", "scontrol", "-o", "show", "node", name], capture_output=True, text=True, check=True
    ).stdout
    state = line.split(" State=", 1)[1].split(" ", 1)[0]
    reason = line.split(" Reason=", 1)[1].strip() if " Reason=" in line else ""
    return state, reason


@pytest.fixture(scope="module")
def declared(tmp_path_factory):
    """gpu2 declared with two GPUs, through a second inventory laid over the lab's."""
    tmp_path = tmp_path_factory.mktemp("declared")
    overlay = tmp_path / "declare-gpus.yml"
    overlay.write_text(yaml.safe_dump({"compute": {"hosts": {"gpu2": {"gpulab_gpu_count": 2}}}}))
    run, report, report_dir = validate(tmp_path, "failing", ROOT / "inventory" / "lab", overlay)
    yield run, report, report_dir, tmp_path
    if node_state("gpu2")[1].startswith("gpulab: validate:"):  # a failed test must not leave gpu2 drained
        validate(tmp_path, "cleanup")


def test_a_node_declared_with_gpus_it_lacks_fails_and_is_drained(declared):
    run, report, _report_dir, _tmp_path = declared
    assert run.returncode == 2, run.stdout[-3000:]
    assert "gpu2 gpu_count: 2 GPUs declared, none could be read" in run.stdout
    assert report["verdict"] == "fail"
    assert report["nodes"]["gpu2"]["status"] == "fail" and report["nodes"]["gpu1"]["status"] != "fail"
    assert report["node_problems"]["gpu2"].startswith("gpu_count: 2 GPUs declared, none could be read")
    # Its power is unknown, not zero: the cost estimate names it and leaves it out.
    assert report["cost"]["not_measured"] == ["gpu2"]
    state, reason = node_state("gpu2")
    assert "DRAIN" in state and reason.startswith("gpulab: validate: gpu_count"), (state, reason)
    assert "DRAIN" not in node_state("gpu1")[0]


def test_the_failing_report_shows_the_node(declared, browser, tmp_path):
    _run, report, report_dir, _tmp_path = declared
    dom = browser("--dump-dom", report_dir=report_dir)
    assert 'id="verdict" data-status="fail"' in dom
    assert "<td>gpu2</td><td>gpu_count</td><td>2 GPUs declared, none could be read" in dom
    banner = dom.split('id="verdict"', 1)[1].split("</div>", 1)[0]  # the banner lists the reason too
    assert "<li>gpu2 · gpu_count: 2 GPUs declared, none could be read" in banner, banner
    browser("--screenshot=/out/failing.png", "--window-size=1280,1400", out_dir=tmp_path, report_dir=report_dir)
    banner_rows(png_rows((tmp_path / "failing.png").read_bytes())[2], "fail")


def test_without_the_declaration_it_passes_and_the_node_resumes(declared):
    _run, _report, _report_dir, tmp_path = declared
    run, report, _latest = validate(tmp_path, "passing")
    assert run.returncode == 0, run.stdout[-3000:]
    assert report["verdict"] in ("pass", "warn"), report["failures"]
    # Resumed: no drain and no reason. (Under load slurmctld may also flag NOT_RESPONDING for a
    # moment, which is about slurmd's replies, not the drain.)
    state, reason = node_state("gpu2")
    assert "DRAIN" not in state and reason == "", (state, reason)
