"""Run a playbook on the lab inventory with its SSH connection given a proxy that closes at once (the lab
need not be up, and when it is, it is not reached): a refusal of bad settings shows as itself, and any
task past it would fail differently."""

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_playbook(playbook, extra_vars, *options, timeout=120):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    # No control master to reuse (ansible.cfg's ssh_args persist one), and a proxy that closes at once.
    extra = dict(extra_vars, ansible_ssh_args="-o ControlMaster=no", ansible_ssh_extra_args="-o ProxyCommand=false")
    cmd = ["ansible-playbook", playbook, "-e", json.dumps(extra), *options]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)
