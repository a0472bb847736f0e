"""Tests of the running lab's validation report (make test-lab runs them after site.yml)."""

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LATEST = ROOT / "reports" / "latest"
BROWSER_IMAGE = "gpulab/browser:1"


@pytest.fixture(scope="session")
def report():
    if not (LATEST / "report.json").exists():
        pytest.fail("no reports/latest/report.json: run `make lab` (site.yml ends with validate.yml) first")
    return json.loads((LATEST / "report.json").read_text())


@pytest.fixture(scope="session")
def browser():
    """Run headless Chromium (in a container) on a report (the latest unless report_dir is given);
    returns a function of its arguments."""
    subprocess.run([str(ROOT / "tests" / "images" / "build-browser.sh")], check=True)

    def run(*args, out_dir=None, report_dir=LATEST):
        mounts = ["-v", f"{Path(report_dir).resolve()}:/report:ro"]
        if out_dir:
            mounts += ["-v", f"{out_dir}:/out"]
        cmd = ["docker", "run", "--rm", *mounts, BROWSER_IMAGE, "chromium", "--headless", "--no-sandbox"]
        cmd += ["--disable-gpu", "--hide-scrollbars", *args, "file:///report/report.html"]
        return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120).stdout

    return run
