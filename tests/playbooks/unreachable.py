"""Run a playbook on the lab inventory with its Docker connection pointed at a socket that does not
exist: a refusal of bad settings shows as itself, and any task past it would fail differently."""

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_playbook(playbook, extra_vars, *options, timeout=120):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    extra = dict(extra_vars, ansible_docker_extra_args="--host=unix:///nonexistent.sock")
    cmd = ["ansible-playbook", playbook, "-e", json.dumps(extra), *options]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)
