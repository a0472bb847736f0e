"""The VMs over plain SSH: a command is one ssh exec on a shared connection, not an Ansible
module run (which costs seconds of Python under emulation)."""

import pytest
import testinfra
from testinfra.utils.ansible_runner import AnsibleRunner

# ServerAlive: a connection to a VM that reboots or loses its address must fail, not hang.
SSH_ARGS = (
    "-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
    "-o ServerAliveInterval=5 -o ServerAliveCountMax=3"
)


@pytest.fixture(scope="module")
def vm_host(request, tmp_path_factory):
    """vm_host(name) -> a testinfra host reaching that VM with the inventory's address, port and key."""
    inventory = AnsibleRunner(request.config.option.ansible_inventory)
    sockets = tmp_path_factory.mktemp("ssh")

    def get(name: str):
        hostvars = inventory.get_variables(name)
        return testinfra.get_host(
            f"ssh://{hostvars['ansible_user']}@{hostvars['ansible_host']}:{hostvars['ansible_port']}",
            ssh_identity_file=hostvars["ansible_ssh_private_key_file"],
            ssh_extra_args=SSH_ARGS,
            controlpath=str(sockets / name),
        )

    return get
