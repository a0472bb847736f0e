"""Shared by the scenarios' testinfra tests: run ansible-playbook against the scenario's own hosts."""

import os
import subprocess
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
