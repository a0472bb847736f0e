"""Each GPU-stack role's tasks/pins.yml, and upgrade_plan comparing them with this machine's dpkg and a
virtualenv (no lab needed: connection local, nothing installed or changed)."""

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pins_of_every_role_compared_with_what_is_installed(tmp_path):
    venv = tmp_path / "nccl"
    (venv / "lib/python3.11/site-packages/nvidia_nccl_cu12-2.19.3.dist-info").mkdir(parents=True)
    out = tmp_path / "plan.json"
    settings = {
        "pins_out": str(out),
        "nvidia_driver_branch": "535",
        "nvidia_driver_version": "535.261.03",
        "cuda_version": "11.8",
        "nccl_source": "wheel",
        "nccl_version": "2.21.5",
        "nccl_wheel_prefix": str(venv),
        "container_runtime_nvidia_toolkit": False,
    }
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    run = subprocess.run(
        ["ansible-playbook", "tests/playbooks/pins.yml", "-e", json.dumps(settings)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    moves = {move["package"]: move for move in json.loads(out.read_text())["pin_moves"]}
    driver = "nvidia_driver_branch 535 / nvidia_driver_version 535.261.03"
    # Debian's container-less 535 flavour: none of it on this machine, so every pinned package moves.
    for package in ("nvidia-smi", "libnvidia-ml1", "libcuda1"):
        assert moves[package] == {
            "role": "nvidia_driver",
            "package": package,
            "installed": None,
            "wanted": driver,
            "version": r"^535\.261\.03(-|$)",
        }
    assert moves["nvidia-cuda-toolkit"]["version"] == r"^11\.8[.]"
    # The wheel in the virtualenv is another release than the pin.
    assert moves["nvidia-nccl-cu12"] == {
        "role": "nccl",
        "package": "nvidia-nccl-cu12",
        "installed": "2.19.3",
        "wanted": "nccl_version 2.21.5",
        "version": r"^2\.21\.5$",
    }
