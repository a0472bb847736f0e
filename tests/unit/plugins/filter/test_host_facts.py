import pytest

from ansible_collections.gpulab.cluster.plugins.filter.host_facts import gpus_per_node, in_container


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


def test_gpus_per_node_is_the_smallest_count_of_the_gpu_nodes():
    hostvars = {"gpu1": {"gpulab_gpu_count": 4}, "gpu2": {"gpulab_gpu_count": "2"}, "cpu1": {}, "login1": {}}
    assert gpus_per_node(hostvars, ["gpu1", "gpu2", "cpu1"]) == 2  # the CPU node does not lower it
    assert gpus_per_node(hostvars, ["gpu1"]) == 4
    assert gpus_per_node(hostvars, ["cpu1", "login1"]) == 0
    assert gpus_per_node(hostvars, []) == 0
