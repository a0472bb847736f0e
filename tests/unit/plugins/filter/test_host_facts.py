import pytest

from ansible_collections.gpulab.cluster.plugins.filter.host_facts import in_container


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        ({"virtualization_role": "guest", "virtualization_type": "docker"}, True),
        ({"virtualization_role": "guest", "virtualization_type": "lxc"}, True),
        ({"virtualization_role": "guest", "virtualization_type": "kvm"}, False),  # a VM has its own kernel
        ({"virtualization_role": "host", "virtualization_type": "kvm"}, False),
        ({}, False),  # facts without the virtual subset: treated as a machine
    ],
)
def test_in_container(facts, expected):
    assert in_container(facts) is expected
