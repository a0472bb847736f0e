"""The doctor on the lab: today's run compared with a baseline, a regression read in the JSON and the page.

The baseline is the lab's own last report (site.yml ends with validate.yml) with its all-reduce bus
bandwidth set to 100 GB/s, as if the cluster had had a fast link: today's real measurement (gloo on
shared CPUs, 0.1 to 1 GB/s, and 3.5 times apart between two runs a minute apart in one CI run, so a
baseline of three times the last one was not enough) must then read as a regression, named with both
values and the tolerance, and doctor_accept must refuse to make a failing run the baseline. Network and
training are skipped (their metrics are simply not compared), so the run costs the gloo benchmark only.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def doctor(report, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("doctor")
    baseline = json.loads(json.dumps(report))
    busbw = next(c for c in baseline["cluster"]["collective"]["checks"] if c["check"] == "collective.busbw")
    busbw["value"] = 100.0
    (tmp_path / "baseline.json").write_text(json.dumps(baseline))
    settings = {
        "doctor_baseline": str(tmp_path / "baseline.json"),
        "doctor_accept": True,
        "validation_report_dir": str(tmp_path / "reports"),
    }
    cmd = ["ansible-playbook", "playbooks/doctor.yml", "--skip-tags", "validate_network,validate_training"]
    cmd += ["-e", json.dumps(settings)]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    latest = tmp_path / "reports" / "latest"
    return run, json.loads((latest / "report.json").read_text()), latest, busbw["value"], tmp_path


def test_slower_busbw_than_the_baseline_fails_naming_both_values(doctor, report):
    run, today, _latest, injected, _tmp_path = doctor
    changed = today["changed_since"]
    assert changed["since"] == report["generated"]
    regressions = {r["check"]: r for r in changed["regressions"]}
    assert "cluster collective.busbw" in regressions, changed
    busbw = regressions["cluster collective.busbw"]
    measured = next(c["value"] for c in today["cluster"]["collective"]["checks"] if c["check"] == "collective.busbw")
    assert (busbw["baseline"], busbw["value"], busbw["tolerance"], busbw["unit"]) == (injected, measured, 0.1, "GB/s")
    assert today["verdict"] == "fail" and run.returncode == 2, run.stdout[-3000:]
    assert "cluster collective.busbw: collective.busbw fell from" in run.stdout
    # The versions are the nodes' own, read twice: nothing changed there.
    assert [c for c in changed["changes"] if c["code"] == "BASELINE_VERSION_CHANGED"] == []


def test_a_failing_run_is_not_made_the_baseline(doctor):
    run, _today, _latest, injected, tmp_path = doctor
    assert "so it is not recorded as the baseline" in run.stdout
    stored = json.loads((tmp_path / "baseline.json").read_text())
    assert next(c["value"] for c in stored["cluster"]["collective"]["checks"] if c["check"] == "collective.busbw") == (
        injected
    )


def test_the_page_opens_with_the_regression(doctor, browser, report):
    _run, today, latest, injected, _tmp_path = doctor
    dom = browser("--dump-dom", report_dir=latest)
    assert dom.index(f"Changed since {report['generated']}") < dom.index("What failed, and what to check next")
    assert int(dom.split('data-regressions="', 1)[1].split('"', 1)[0]) >= 1, dom[:2000]
    row = dom.split('data-check="cluster collective.busbw"', 1)[1].split("</tr>", 1)[0]
    assert f'<td class="old">{injected} GB/s</td>' in row, row
    assert ", baseline" in dom and ", now" in dom  # the chart draws the baseline's sweep beside today's
