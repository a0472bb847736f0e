"""gpulab-node-check (the slurm role's HealthCheckProgram), rendered and run against a stand-in scontrol:
it drains and resumes its own drains only, and leaves every other owner's reason (validation, upgrade,
UPS, an administrator's) as it is. Without /dev/nvidia* here, a node that declares GPUs has a problem."""

import subprocess
from pathlib import Path

import pytest
from role_templates import render

TEMPLATE = Path(__file__).resolve().parents[2] / "roles/slurm/templates/gpulab-node-check.j2"

# Prints the node's line with the reason in $STAND_IN/reason; records every update.
SCONTROL = """#!/bin/sh
if [ "$1" = -o ]; then
  reason=$(cat "$STAND_IN/reason")
  if [ -n "$reason" ]; then
    echo "NodeName=gpu1 State=IDLE+DRAIN Reason=$reason"
  else
    echo "NodeName=gpu1 State=IDLE"
  fi
else
  echo "$*" >>"$STAND_IN/updates"
fi
"""


def run_check(tmp_path, gpus, reason):
    script = render(TEMPLATE, inventory_hostname="gpu1", __slurm_gpu_count=gpus)
    # The script sets PATH for slurmd's empty environment: the stand-in goes first.
    script = script.replace("export PATH=", f"export PATH={tmp_path}:", 1)
    (tmp_path / "scontrol").write_text(SCONTROL)
    (tmp_path / "scontrol").chmod(0o755)
    (tmp_path / "reason").write_text(reason)
    (tmp_path / "updates").write_text("")
    done = subprocess.run(
        ["bash", "-c", script], env={"STAND_IN": str(tmp_path)}, capture_output=True, text=True, check=False
    )
    return done.returncode, (tmp_path / "updates").read_text().splitlines()


DRAIN = "update NodeName=gpu1 State=DRAIN Reason=gpulab: 0 of 2 GPU devices present"
RESUME = "update NodeName=gpu1 State=RESUME"


@pytest.mark.parametrize(
    ("gpus", "reason", "rc", "updates"),
    [
        (2, "", 1, [DRAIN]),
        (2, "gpulab: 0 of 2 GPU devices present", 1, []),  # drained for this already
        (2, "gpulab: nvidia-smi lists 1 of 2 GPUs", 1, [DRAIN]),  # its own older problem: the reason moves on
        (2, "gpulab: validate: ecc: 3", 1, []),
        (2, "gpulab: upgrade in progress", 1, []),
        (2, "gpulab: upgrade-ceph: Ceph down while storage1 is upgraded", 1, []),
        (2, "gpulab: ups: on battery", 1, []),
        (2, "disk replaced", 1, []),
        (0, "gpulab: 1 of 2 GPU devices present", 0, [RESUME]),
        (0, "gpulab: validate: gpu_count", 0, []),
        (0, "gpulab: upgrade health gate failed: gpu gpu_count", 0, []),
        (0, "gpulab: ups: on battery", 0, []),
        (0, "disk replaced", 0, []),
        (0, "", 0, []),
    ],
)
def test_it_acts_on_its_own_drains_only(tmp_path, gpus, reason, rc, updates):
    assert run_check(tmp_path, gpus, reason) == (rc, updates)
