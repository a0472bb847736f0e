"""Shared by the scenarios' testinfra tests: run ansible-playbook against the scenario's own hosts."""

import os
import subprocess
import time
from pathlib import Path

import pytest
import testinfra


@pytest.fixture(scope="session")
def ansible_playbook():
    """ansible_playbook(*args, inventories=(), timeout=300) -> CompletedProcess, stdout and stderr merged.

    Runs from the project root against Molecule's inventory (plus any extra inventories).
    """
    project = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
    inventory = Path(os.environ["MOLECULE_INVENTORY_FILE"]).parent
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")

    def run(*args: str, inventories: tuple[Path, ...] = (), timeout: int = 300) -> subprocess.CompletedProcess:
        sources = [arg for path in (inventory, *inventories) for arg in ("-i", str(path))]
        return subprocess.run(
            ["ansible-playbook", *sources, *args],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run


@pytest.fixture(scope="module")
def scenario_host(request):
    """scenario_host(name) -> the testinfra host of that name in the scenario's inventory."""

    def get(name: str):
        return testinfra.get_host(f"ansible://{name}", ansible_inventory=request.config.option.ansible_inventory)

    return get


@pytest.fixture(scope="session")
def restart_container():
    """restart_container(name, seconds=180): docker restart, then wait until the node's systemd has booted.

    Through Docker, as lab.yml's wait, whatever the inventory's connection (SSH answers only once sshd runs
    again). Retried, since the first calls can come before systemd's bus.
    """

    def restart(name: str, seconds: int = 180) -> None:
        subprocess.run(["docker", "restart", name], check=True, capture_output=True, timeout=120)
        deadline = time.monotonic() + seconds
        state = ""
        while state not in ("running", "degraded") and time.monotonic() < deadline:
            wait = ["docker", "exec", name, "timeout", "30", "systemctl", "is-system-running", "--wait"]
            state = subprocess.run(wait, capture_output=True, text=True, timeout=60, check=False).stdout.strip()
            if state not in ("running", "degraded"):
                time.sleep(1)
        assert state in ("running", "degraded"), f"{name} had not booted after {seconds} s: {state!r}"

    return restart
