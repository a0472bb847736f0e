"""Tagged runs of one role (`--tags ROLE`), as operators use them, work on the built lab and change nothing."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "playbook, tag", [("gpu_stack", "container_runtime"), ("gpu_stack", "nccl"), ("training", "training")]
)
def test_a_tagged_run_works_and_changes_nothing(playbook, tag):
    run = subprocess.run(
        ["ansible-playbook", f"playbooks/{playbook}.yml", "--tags", tag, "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    recap = run.stdout.split("PLAY RECAP", 1)[1]
    assert " changed=0 " in recap and " changed=1" not in recap and "failed=0" in recap, recap
