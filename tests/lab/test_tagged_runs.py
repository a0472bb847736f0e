"""Tagged runs of one role (`--tags ROLE`), as operators use them, work on the built lab and change nothing.
They go through ansible-runner with the private data dir the project ships (runner/), and are judged
from the run's events, not its printed output."""

from pathlib import Path

import ansible_runner
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "playbook, tag",
    [("gpu_stack", "container_runtime"), ("gpu_stack", "nccl"), ("training", "training"), ("training", "ray")],
)
def test_a_tagged_run_works_and_changes_nothing(playbook, tag, tmp_path):
    run = ansible_runner.run(
        private_data_dir=str(ROOT / "runner"),
        project_dir=str(ROOT),
        artifact_dir=str(tmp_path),
        inventory=str(ROOT / "inventory" / "lab"),
        playbook=f"playbooks/{playbook}.yml",
        cmdline=f"--tags {tag} --check",
        suppress_env_files=True,  # the shipped runner/env stays as it is
        quiet=True,
        timeout=300,
    )
    assert (run.status, run.rc) == ("successful", 0), run.stdout.read()[-3000:]
    assert (run.stats["changed"], run.stats["failures"], run.stats["dark"]) == ({}, {}, {})
    # The role's own tasks ran on both compute nodes, not a play that skipped everything.
    ran = {
        event["event_data"]["host"]
        for event in run.events
        if event["event"] == "runner_on_ok" and (event["event_data"].get("role") or "").split(".")[-1] == tag
    }
    assert {"gpu1", "gpu2"} <= ran, ran
