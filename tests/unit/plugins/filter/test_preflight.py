import pytest

from ansible_collections.gpulab.cluster.plugins.filter.preflight import (
    check_hosts,
    gpu_links,
    os_label,
    preflight_link_warnings,
    preflight_problems,
)

PLAN = {"networks": {"management": {"subnet": "10.10.0.0/24"}}}


def facts(distribution="Debian", version="12.11", major="12", kernel="6.1.0-37-amd64", hostname=None):
    return {
        "distribution": distribution,
        "distribution_version": version,
        "distribution_major_version": major,
        "kernel": kernel,
        "hostname": hostname,
    }


def node(name, groups=("compute",), python=True, address=None, **fact_args):
    return {
        "groups": list(groups),
        "python": python,
        "facts": facts(hostname=name, **fact_args) if python else {},
        "address": address,
    }


def healthy_cluster():
    return {
        "mgmt1": node("mgmt1", groups=("management",), address="10.10.0.11"),
        "gpu1": node("gpu1", address="10.10.0.13"),
        "gpu2": node("gpu2", address="10.10.0.14"),
    }


def test_healthy_cluster_has_no_problems():
    assert check_hosts(healthy_cluster()) == []


@pytest.mark.parametrize(
    ("facts_", "label"),
    [
        (facts(version="12.11", major="12"), "Debian 12"),
        (facts("Ubuntu", "22.04", "22"), "Ubuntu 22.04"),
        (facts("Ubuntu", "24.04", "24"), "Ubuntu 24.04"),
        ({}, "unknown ?"),
    ],
)
def test_os_label(facts_, label):
    assert os_label(facts_) == label


def test_host_in_no_node_group():
    cluster = healthy_cluster()
    cluster["spare"] = node("spare", groups=("ungrouped",), address="10.10.0.30")
    assert check_hosts(cluster) == [
        "spare: in none of the node groups (management, compute, storage); add it to at least one"
    ]


def test_missing_python_is_reported_and_its_facts_ignored():
    cluster = healthy_cluster()
    cluster["gpu3"] = node("gpu3", python=False, address="10.10.0.15")
    assert check_hosts(cluster) == ["gpu3: no python3 on the host; install it (apt-get install python3) and rerun"]


def test_unsupported_and_different_os_release():
    cluster = healthy_cluster()
    cluster["gpu2"] = node("gpu2", address="10.10.0.14", version="11.9", major="11")
    assert check_hosts(cluster) == [
        "gpu2: Debian 11 is not supported; install one of: Ubuntu 22.04, Ubuntu 24.04, Debian 12",
        "gpu2: runs Debian 11 while the other nodes run Debian 12; install the same OS release on every node",
    ]


def test_supported_but_mixed_os_names_the_minority():
    cluster = healthy_cluster()
    cluster["gpu1"] = node("gpu1", address="10.10.0.13", distribution="Ubuntu", version="22.04", major="22")
    assert check_hosts(cluster) == [
        "gpu1: runs Ubuntu 22.04 while the other nodes run Debian 12; install the same OS release on every node"
    ]


def test_point_releases_count_as_one_release():
    cluster = healthy_cluster()
    cluster["gpu1"] = node("gpu1", address="10.10.0.13", version="12.7")
    assert check_hosts(cluster) == []


def test_different_kernel():
    cluster = healthy_cluster()
    cluster["gpu2"] = node("gpu2", address="10.10.0.14", kernel="6.1.0-41-amd64")
    assert check_hosts(cluster) == [
        "gpu2: runs kernel 6.1.0-41-amd64 while the other nodes run 6.1.0-37-amd64; "
        "install the same kernel everywhere and reboot"
    ]


def test_shared_address_and_hostname():
    cluster = healthy_cluster()
    cluster["gpu2"]["address"] = "10.10.0.13"
    cluster["gpu2"]["facts"]["hostname"] = "gpu1"
    assert check_hosts(cluster) == [
        "gpu1, gpu2: share the address 10.10.0.13; give each host its own gpulab_node_index (or gpulab_address)",
        "gpu1, gpu2: share the hostname 'gpu1'; give every node its own hostname",
    ]


def test_supported_list_is_configurable():
    assert check_hosts(healthy_cluster(), supported=["Ubuntu 24.04"])[0] == (
        "gpu1: Debian 12 is not supported; install one of: Ubuntu 24.04"
    )


def _hostvars():
    def hv(index, groups, rc=0, **fact_args):
        return {
            "gpulab_node_index": index,
            "group_names": groups,
            "__gpulab_python_probe": {"rc": rc},
            "ansible_facts": facts(**fact_args) if rc == 0 else {},
        }

    return {
        "mgmt1": hv(1, ["management"], hostname="mgmt1"),
        "gpu1": hv(3, ["compute"], hostname="gpu1"),
        "gpu2": hv(3, ["compute"], hostname="gpu2", version="11.9", major="11"),
        "odd": hv(5, [], rc=127),
    }


def test_filter_collects_every_problem_in_one_list():
    assert preflight_problems(_hostvars(), ["mgmt1", "gpu1", "gpu2", "odd"], PLAN) == [
        "odd: in none of the node groups (management, compute, storage); add it to at least one",
        "odd: no python3 on the host; install it (apt-get install python3) and rerun",
        "gpu2: Debian 11 is not supported; install one of: Ubuntu 22.04, Ubuntu 24.04, Debian 12",
        "gpu2: runs Debian 11 while the other nodes run Debian 12; install the same OS release on every node",
        "gpu1, gpu2: share the address 10.10.0.13; give each host its own gpulab_node_index (or gpulab_address)",
    ]


def test_filter_reports_a_host_without_index():
    hostvars = _hostvars()
    del hostvars["odd"]["gpulab_node_index"]
    problems = preflight_problems(hostvars, ["mgmt1", "odd"], PLAN)
    assert problems[0] == "host odd has neither gpulab_node_index nor gpulab_address; set one in the inventory"


def test_a_plan_without_networks_is_a_problem_not_an_error():
    assert preflight_problems({}, [], {"fabric": "roce", "netwroks": {}}) == [
        "gpulab_network has an unknown key 'netwroks': did you mean 'networks'?",
        "gpulab_network must be a mapping with a non-empty 'networks' mapping",
    ]


def test_a_slurm_pin_nothing_reads_is_refused():
    plan = {"fabric": "ethernet", "networks": {"management": {"subnet": "10.0.0.0/24"}}}
    hostvars = {"gpu1": {"gpulab_node_index": 1, "gpulab_versions": {"slurm": "23.11", "nccl": "2.21.5"}}}
    problems = preflight_problems(hostvars, ["gpu1"], plan)
    assert any(p.startswith("gpulab_versions.slurm is not read by any role") for p in problems), problems


def test_an_infiniband_fabric_needs_a_subnet_manager():
    plan = {"fabric": "infiniband", "networks": {"management": {"subnet": "10.0.0.0/24"}}}
    hostvars = {"gpu1": {"gpulab_node_index": 1}}
    problems = preflight_problems(hostvars, ["gpu1"], plan)
    assert any(
        p.startswith("gpulab_network.fabric is infiniband but rdma_subnet_manager_hosts is empty") for p in problems
    )
    for named in ({"rdma_subnet_manager_hosts": ["gpu1"]}, {"rdma_subnet_manager_external": True}):
        problems = preflight_problems({"gpu1": {"gpulab_node_index": 1, **named}}, ["gpu1"], plan)
        assert not any("subnet manager" in p for p in problems), problems


def test_compute_node_without_gpu_fails_unless_allowed():
    cluster = healthy_cluster()
    cluster["gpu1"]["nvidia_gpus"] = ["0000:41:00.0", "0000:61:00.0"]
    cluster["gpu2"]["nvidia_gpus"] = []
    assert check_hosts(cluster) == [
        "gpu2: in the compute group but no NVIDIA GPU is on its PCI bus; seat the GPU, move the host out "
        "of compute, or set nvidia_driver_require_gpu: false"
    ]
    cluster["gpu2"]["require_gpu"] = False
    assert check_hosts(cluster) == []


def test_filter_reads_the_gpu_probe_and_the_opt_out():
    hostvars = _hostvars()
    hostvars["gpu2"].update(gpulab_node_index=4, ansible_facts=facts(hostname="gpu2"))
    hostvars["gpu1"]["__nvidia_driver_gpus"] = {"stdout_lines": []}
    hostvars["gpu2"]["__nvidia_driver_gpus"] = {"stdout_lines": ["0000:41:00.0 16 16 0"]}
    hostvars["gpu2"]["nvidia_driver_require_gpu"] = False
    hostvars["mgmt1"]["__nvidia_driver_gpus"] = {"skipped": True}  # not a compute node: not looked at
    problems = preflight_problems(hostvars, ["mgmt1", "gpu1", "gpu2"], PLAN)
    assert problems == [
        "gpu1: in the compute group but no NVIDIA GPU is on its PCI bus; seat the GPU, move the host out "
        "of compute, or set nvidia_driver_require_gpu: false"
    ]


def test_a_gpu_count_that_is_not_a_whole_number_is_refused():
    plan = {"fabric": "ethernet", "networks": {"management": {"subnet": "10.0.0.0/24"}}}
    hostvars = {"gpu1": {"gpulab_node_index": 1, "gpulab_gpu_count": 1.5}}
    problems = preflight_problems(hostvars, ["gpu1"], plan)
    assert "gpu1: gpulab_gpu_count must be a whole number of at least 1, got 1.5; " in " ".join(problems), problems


# find_gpus' lines as sysfs gives them on a two-socket board with a GPU per socket (numa_node 0 and 1); a
# single-socket board or a VM says -1; an old kernel without the link files gives "?".
TWO_SOCKETS = ["0000:41:00.0 16 16 0", "0000:c1:00.0 16 16 1"]
PLAN_100G = {"fabric": "roce", "link_speed_gbps": 100}


def links_of(gpus, nic=None, **hv):
    hostvars = {"gpu1": {"__nvidia_driver_gpus": {"stdout_lines": gpus}, **hv}}
    if nic is not None:
        hostvars["gpu1"]["__gpulab_fabric_link"] = {"stdout": nic}
    return preflight_link_warnings(hostvars, ["gpu1"], PLAN_100G)


def test_gpu_lines_are_read_with_what_sysfs_could_not_say():
    assert gpu_links(["0000:41:00.0 8 16 -1", "0000:61:00.0 ? ? ?", "garbage"]) == [
        {"address": "0000:41:00.0", "width": 8.0, "max_width": 16.0, "numa": -1.0},
        {"address": "0000:61:00.0", "width": None, "max_width": None, "numa": None},
    ]


def test_a_healthy_board_gives_no_warning():
    assert links_of(TWO_SOCKETS[:1], nic="16 16.0 0") == []
    assert links_of(["0000:41:00.0 16 16 -1"], nic="16 8.0 -1") == []  # gen 3 x16: 126 Gb/s for 100
    assert links_of(["0000:41:00.0 ? ? ?"]) == []  # nothing readable, nothing said
    # What find_gpus read on a lent H200 in a Firecracker VM (tests/device, 2026-12-04): no NUMA node (-1),
    # so a NIC on node 0 is not judged against it.
    assert links_of(["0000:00:06.0 16 16 -1"], nic="16 16.0 0") == []


def test_a_100g_nic_in_an_x8_gen3_slot_warns_with_the_planners_words():
    assert links_of([], nic="8 8.0 0") == [
        "gpu1: the fabric NIC's link: a PCIe gen 3 x8 slot carries 63 Gb/s, short of the NIC's 100 Gb/s port: "
        "put it in an x16 slot (or gen 4 x8)"
    ]
    assert links_of([], nic="8 16.0 0") == []  # gen 4 x8: 126 Gb/s


def test_gpus_on_the_other_socket_from_the_nic_warn():
    assert links_of(TWO_SOCKETS, nic="16 16.0 0") == [
        "gpu1: GPUs on NUMA node(s) [1], the NIC on 0: their traffic crosses the CPU link; "
        "one NIC per NUMA node, or set NCCL to the near one"
    ]


def test_a_gpu_below_its_slot_warns_against_the_declared_width_first():
    narrow = ["0000:41:00.0 8 16 0"]
    assert links_of(narrow) == [
        "gpu1: the GPU at 0000:41:00.0 runs at x8 of x16: a slot narrower than planned, a riser, or a card not "
        "seated (gpulab_gpu_pcie_width declares the slot's width)"
    ]
    assert links_of(narrow, gpulab_gpu_pcie_width=8) == []  # an x8/x8 board, as declared
