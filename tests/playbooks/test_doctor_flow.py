"""The doctor's first and second run, on this machine alone (a one-host inventory, local connection, nothing
installed): the first finds no baseline and records itself with doctor_accept, the second is compared with
it and leaves it as it was."""

import json
import os
import subprocess
import sys

from unreachable import ROOT


def doctor(tmp_path, **extra):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        f"      ansible_python_interpreter: {sys.executable}\n"
    )
    settings = {
        "validation_packages": [],
        "validation_collective_bench": False,
        "validation_report_dir": str(tmp_path / "reports"),
        **extra,
    }
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    cmd = ["ansible-playbook", "-i", str(inventory), "playbooks/doctor.yml", "--skip-tags", "validate_long"]
    run = subprocess.run(
        [*cmd, "-e", json.dumps(settings)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert run.returncode == 0, run.stdout[-3000:]
    return json.loads((tmp_path / "reports" / "latest" / "report.json").read_text())


def test_the_first_run_records_the_baseline_and_the_next_is_compared_with_it(tmp_path):
    baseline = tmp_path / "reports" / "baseline.json"
    first = doctor(tmp_path, doctor_accept=True)
    assert first["changed_since"]["since"] is None
    assert [c["code"] for c in first["changed_since"]["checks"]] == ["BASELINE_MISSING"]
    assert json.loads(baseline.read_text()) == first  # recorded as written
    second = doctor(tmp_path)
    assert second["changed_since"]["since"] == first["generated"]
    assert second["changed_since"]["regressions"] == [] and second["changed_since"]["changes"] == []
    assert second["versions"] == first["versions"] and second["versions"]["localhost"]["kernel"]
    assert json.loads(baseline.read_text()) == first  # not asked to accept: left alone
