"""The execution environment (execution-environment.yml, `make ee`) runs gpulab.cluster: ansible-runner
starts a playbook inside the image, as AWX does, and the run is judged from its events."""

import json
import shutil
from pathlib import Path

import ansible_runner
import yaml

ROOT = Path(__file__).resolve().parents[2]
VERSION = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
IMAGE = f"gpulab/ee:{VERSION}"  # as scripts/ee.sh tags it


def results(run, event, task):
    return [e["event_data"]["res"] for e in run.events if e["event"] == event and e["event_data"]["task"] == task]


def test_a_playbook_runs_in_the_execution_environment_on_the_installed_collection(tmp_path):
    (tmp_path / "project").mkdir()
    shutil.copy(ROOT / "tests/ee/smoke.yml", tmp_path / "project/smoke.yml")
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory/hosts").write_text(
        "localhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n"
    )
    run = ansible_runner.run(
        private_data_dir=str(tmp_path),
        playbook="smoke.yml",
        process_isolation=True,
        process_isolation_executable="docker",
        container_image=IMAGE,
        quiet=True,
        timeout=300,
    )
    # The mismatch fails its task, and so the run: the verdict holds inside the image too.
    assert (run.status, run.rc) == ("failed", 2), run.stdout.read()[-3000:]
    assert run.stats["failures"] == {"localhost": 1} and run.stats["ok"] == {"localhost": 2}

    (listed,) = results(run, "runner_on_ok", "List the collection where the image installed it")
    assert json.loads(listed["stdout"]) == {
        "/usr/share/ansible/collections/ansible_collections": {"gpulab.cluster": {"version": VERSION}}
    }

    (compared,) = results(run, "runner_on_failed", "Compare two nodes whose kernels differ")
    checks = {c["check"]: c for c in compared["checks"]}
    assert checks["consistency.kernel"]["status"] == "fail"
    assert checks["consistency.kernel"]["code"] == "VERSION_MISMATCH"
    assert checks["consistency.kernel"]["value"]["node2"] == "0.0.0-test"
    # Read inside the image: its own OS, the Debian 12 it was built from.
    assert checks["consistency.os"] == {**checks["consistency.os"], "status": "pass", "value": "Debian 12"}
