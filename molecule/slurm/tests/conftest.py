"""Fixtures of the Slurm scenario's tests."""

import pytest
import testinfra


@pytest.fixture(scope="module")
def ctl(request):
    """The controller, where users submit jobs."""
    return testinfra.get_host("ansible://slurm-mgmt", ansible_inventory=request.config.option.ansible_inventory)


@pytest.fixture(scope="module")
def node(request):
    def get(name):
        return testinfra.get_host(f"ansible://{name}", ansible_inventory=request.config.option.ansible_inventory)

    return get
