"""What the GPU-stack roles install per distribution, source and branch, and /etc/nccl.conf per plan.

The Ubuntu and NVIDIA-repository cases cannot run on the build machines (no Ubuntu archive, no
NVIDIA repositories); these tests are what covers them.
"""

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from role_templates import render

from ansible_collections.gpulab.cluster.plugins.filter.gpu_stack import (
    apt_pin_version,
    apt_source,
    apt_source_files,
    cuda_packages,
    cuda_repo_url,
    debian_nonfree_sources,
    nccl_packages,
    nccl_settings,
    nvidia_driver_packages,
)

DEBIAN = {"distribution": "Debian", "distribution_major_version": "12", "distribution_version": "12.11",
          "distribution_release": "bookworm", "architecture": "x86_64"}  # fmt: skip
JAMMY = {"distribution": "Ubuntu", "distribution_major_version": "22", "distribution_version": "22.04",
         "distribution_release": "jammy", "architecture": "x86_64"}  # fmt: skip
NOBLE_ARM = dict(JAMMY, distribution_version="24.04", distribution_release="noble", architecture="aarch64")


def test_debian_default_branch_on_a_machine():
    assert nvidia_driver_packages(DEBIAN, "distribution", "535") == {
        "pinned": ["nvidia-smi", "libnvidia-ml1", "libcuda1", "nvidia-kernel-dkms", "firmware-nvidia-gsp"],
        "unpinned": ["nvidia-persistenced"],
    }


def test_debian_tesla_branch_in_a_container_open_modules_ignored_without_kernel():
    packages = nvidia_driver_packages(DEBIAN, "distribution", "tesla-470", open_modules=True, kernel_modules=False)
    assert packages["pinned"] == ["nvidia-tesla-470-smi", "libnvidia-tesla-470-ml1", "libnvidia-tesla-470-cuda1"]


def test_debian_open_modules_and_no_gsp_firmware_before_525():
    assert nvidia_driver_packages(DEBIAN, "distribution", "tesla-535", open_modules=True)["pinned"][3:] == [
        "nvidia-tesla-535-open-kernel-dkms",
        "firmware-nvidia-tesla-535-gsp",
    ]
    assert "firmware-nvidia-tesla-470-gsp" not in nvidia_driver_packages(DEBIAN, "distribution", "tesla-470")["pinned"]


def test_ubuntu_server_packages_and_cuda_repo_packages():
    assert nvidia_driver_packages(JAMMY, "distribution", "550", open_modules=True) == {
        "pinned": [
            "nvidia-utils-550-server",
            "libnvidia-compute-550-server",
            "nvidia-dkms-550-server-open",
            "nvidia-compute-utils-550-server",
        ],
        "unpinned": [],
    }
    assert nvidia_driver_packages(JAMMY, "cuda_repo", 570, fabricmanager=True, persistenced=False)["pinned"] == [
        "nvidia-utils-570",
        "libnvidia-compute-570",
        "nvidia-dkms-570",
        "nvidia-fabricmanager-570",
        "libnvidia-nscq-570",
    ]


@pytest.mark.parametrize(
    ("facts", "source", "branch", "message"),
    [
        (DEBIAN, "distribution", "5350", "nvidia_driver_branch '5350' is not a Debian branch"),
        (DEBIAN, "distribution", "tesla", "nvidia_driver_branch 'tesla' is not a Debian branch"),
        (JAMMY, "distribution", "tesla-470", "nvidia_driver_branch must be a branch number"),
        (JAMMY, "ppa", "550", "nvidia_driver_source must be one of distribution, cuda_repo, got 'ppa'"),
        ({"distribution": "Fedora"}, "distribution", "550", "supports Debian and Ubuntu, not 'Fedora'"),
    ],
)
def test_bad_driver_choices_are_named(facts, source, branch, message):
    with pytest.raises(AnsibleFilterError, match=message):
        nvidia_driver_packages(facts, source, branch)


def test_debian_has_no_fabric_manager():
    with pytest.raises(AnsibleFilterError, match="Debian does not package the NVIDIA fabric manager"):
        nvidia_driver_packages(DEBIAN, "distribution", "535", fabricmanager=True)


def test_cuda_and_nccl_packages():
    assert cuda_packages(DEBIAN, "distribution", "11.8") == ["nvidia-cuda-toolkit"]
    assert cuda_packages(JAMMY, "cuda_repo", "12.4") == ["cuda-toolkit-12-4"]
    assert cuda_packages(DEBIAN, "cuda_repo", "12.6.3") == ["cuda-toolkit-12-6"]
    assert nccl_packages("2.21.5", "12.4") == ["libnccl2=2.21.5-1+cuda12.4", "libnccl-dev=2.21.5-1+cuda12.4"]
    with pytest.raises(AnsibleFilterError, match="too old for a pinned stack"):
        cuda_packages(JAMMY, "distribution", "12.4")
    with pytest.raises(AnsibleFilterError, match="cuda_version must look like 12.4, got 'twelve'"):
        cuda_packages(JAMMY, "cuda_repo", "twelve")
    with pytest.raises(AnsibleFilterError, match="nccl_version must look like 2.21.5, got '2.21'"):
        nccl_packages("2.21", "12.4")


def test_cuda_repo_paths():
    base = "https://developer.download.nvidia.com/compute/cuda/repos/"
    assert cuda_repo_url(JAMMY, base) == base + "ubuntu2204/x86_64/"
    assert cuda_repo_url(NOBLE_ARM, base) == base + "ubuntu2404/sbsa/"
    assert cuda_repo_url(DEBIAN, "http://mirror.lab/cuda") == "http://mirror.lab/cuda/debian12/x86_64/"
    with pytest.raises(AnsibleFilterError, match="no packages for architecture 'ppc64le'"):
        cuda_repo_url(dict(JAMMY, architecture="ppc64le"), base)


def test_apt_sources_for_every_kind():
    assert apt_source(DEBIAN, "debian_nonfree", "http://deb.debian.org/debian") == {
        "name": "gpulab-debian-nonfree",
        "uris": ["http://deb.debian.org/debian"],
        "suites": ["bookworm", "bookworm-updates"],
        "components": ["contrib", "non-free", "non-free-firmware"],
        "signed_by": "/usr/share/keyrings/debian-archive-keyring.gpg",
    }
    assert apt_source(DEBIAN, "debian_security_nonfree", "http://deb.debian.org/debian-security")["suites"] == [
        "bookworm-security"
    ]
    cuda = apt_source(JAMMY, "cuda_repo", "https://developer.download.nvidia.com/compute/cuda/repos")
    assert cuda == {
        "name": "gpulab-cuda-repo",
        "uris": ["https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"],
        "suites": ["/"],
        "components": [],
        "signed_by": "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/3bf863cc.pub",
    }
    toolkit = apt_source(
        NOBLE_ARM, "nvidia_container_toolkit", "https://nvidia.github.io/libnvidia-container/stable/deb/",
        "https://nvidia.github.io/libnvidia-container/gpgkey",
    )  # fmt: skip
    assert toolkit["uris"] == ["https://nvidia.github.io/libnvidia-container/stable/deb/arm64"]
    assert toolkit["signed_by"] == "https://nvidia.github.io/libnvidia-container/gpgkey"
    docker = apt_source(JAMMY, "docker", "http://mirror.lab/docker", "/usr/share/keyrings/docker.gpg")
    assert docker == {
        "name": "gpulab-docker",
        "uris": ["http://mirror.lab/docker/ubuntu"],
        "suites": ["jammy"],
        "components": ["stable"],
        "signed_by": "/usr/share/keyrings/docker.gpg",
    }
    assert apt_source(DEBIAN, "docker", "https://download.docker.com/linux")["signed_by"] == (
        "https://download.docker.com/linux/debian/gpg"
    )


def test_debian_nonfree_sources_are_the_release_and_its_security_updates():
    sources = debian_nonfree_sources(DEBIAN, "http://mirror.lab/debian", "http://mirror.lab/debian-security")
    assert [(s["name"], s["uris"], s["suites"]) for s in sources] == [
        ("gpulab-debian-nonfree", ["http://mirror.lab/debian"], ["bookworm", "bookworm-updates"]),
        ("gpulab-debian-security-nonfree", ["http://mirror.lab/debian-security"], ["bookworm-security"]),
    ]


@pytest.mark.parametrize(
    ("facts", "kind", "message"),
    [
        (JAMMY, "debian_nonfree", "Debian's non-free components exist on Debian only"),
        (JAMMY, "nvidia_container_toolkit", "needs its key URL"),
        (JAMMY, "ppa", "unknown apt source kind 'ppa'"),
    ],
)
def test_apt_source_refusals(facts, kind, message):
    with pytest.raises(AnsibleFilterError, match=message):
        apt_source(facts, kind, "http://mirror.lab")


def test_apt_pin_version():
    assert apt_pin_version("535.309.01") == "535.309.01-*"
    with pytest.raises(AnsibleFilterError, match="upstream version such as 535.309.01, got '535.309.01-1'"):
        apt_pin_version("535.309.01-1")


def as_conf(settings):
    return {s["name"]: s["value"] for s in settings}


ROCE_PLAN = {
    "fabric": "roce",
    "link_speed_gbps": 100,
    "networks": {"compute": {"subnet": "10.20.0.0/24", "vlan": 20, "interface": "enp65s0f0np0"}},
    "roce": {"pfc_priority": 3, "dscp": 26},
}


def test_nccl_conf_for_roce():
    settings = nccl_settings(ROCE_PLAN, ["mlx5_0", "mlx5_1"])
    assert as_conf(settings) == {
        "NCCL_SOCKET_IFNAME": "enp65s0f0np0.20",
        "NCCL_IB_HCA": "=mlx5_0,mlx5_1",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "106",  # DSCP 26 << 2 with ECT(0): the ToS RDMA-CM and the switch checklist use
        "NCCL_BUFFSIZE": "8388608",
        "NCCL_DEBUG": "WARN",
    }
    assert all(s["why"] for s in settings)
    assert "PFC priority 3" in next(s["why"] for s in settings if s["name"] == "NCCL_IB_TC")


def test_nccl_conf_overrides_and_extra_settings_come_last():
    plan = dict(ROCE_PLAN, roce={"dscp": 24, "gid_index": 1})
    settings = nccl_settings(
        plan,
        [],
        {"gid_index": "", "socket_ifname": "bond0.20", "proto": "Simple", "extra": {"NCCL_NET_GDR_LEVEL": "PHB"}},
    )
    conf = as_conf(settings)
    assert conf["NCCL_IB_GID_INDEX"] == "1" and conf["NCCL_IB_TC"] == "98"  # 24 << 2 | ECT(0)
    no_ecn = as_conf(nccl_settings(dict(ROCE_PLAN, roce={"dscp": 24, "ecn": False}), [], {}))
    assert no_ecn["NCCL_IB_TC"] == "96"
    assert conf["NCCL_SOCKET_IFNAME"] == "bond0.20" and conf["NCCL_PROTO"] == "Simple"
    assert "NCCL_IB_HCA" not in conf
    assert settings[-1]["name"] == "NCCL_NET_GDR_LEVEL"
    with pytest.raises(AnsibleFilterError, match="'GDR_LEVEL' is not an NCCL_ setting"):
        nccl_settings(plan, [], {"extra": {"GDR_LEVEL": 1}})


def test_nccl_conf_for_infiniband_and_ethernet():
    ib = {
        "fabric": "infiniband",
        "networks": {"compute": {"interface": "ib0", "vlan": 20}},
        "infiniband": {"service_level": 1},
    }
    assert as_conf(nccl_settings(ib, ["mlx5_0"])) == {
        "NCCL_SOCKET_IFNAME": "ib0",
        "NCCL_IB_HCA": "=mlx5_0",
        "NCCL_IB_SL": "1",
        "NCCL_BUFFSIZE": "8388608",
        "NCCL_DEBUG": "WARN",
    }
    eth = {"fabric": "ethernet", "link_speed_gbps": 25, "networks": {"management": {"subnet": "10.0.0.0/24"}}}
    assert as_conf(nccl_settings(eth)) == {
        "NCCL_SOCKET_IFNAME": "^lo,docker",
        "NCCL_IB_DISABLE": "1",
        "NCCL_SOCKET_NTHREADS": "4",
        "NCCL_NSOCKS_PERTHREAD": "4",
        "NCCL_BUFFSIZE": "8388608",
        "NCCL_DEBUG": "WARN",
    }
    assert "NCCL_SOCKET_NTHREADS" not in as_conf(nccl_settings(dict(eth, link_speed_gbps=10)))
    with pytest.raises(AnsibleFilterError, match="fabric must be roce, infiniband or ethernet, got 'omnipath'"):
        nccl_settings({"fabric": "omnipath"})


def test_each_apt_source_is_one_file_rendered_from_its_entry():
    sources = [
        apt_source(JAMMY, "cuda_repo", "https://developer.download.nvidia.com/compute/cuda/repos"),
        apt_source(DEBIAN, "debian_nonfree", "http://deb.debian.org/debian"),
    ]
    entries = apt_source_files(sources)
    assert [e["path"] for e in entries] == [
        f"/etc/apt/sources.list.d/{sources[0]['name']}.sources",
        f"/etc/apt/sources.list.d/{sources[1]['name']}.sources",
    ]
    template = Path(__file__).resolve().parents[4] / "roles/common/templates" / entries[0]["template"]
    assert render(template, **entries[0]["vars"]) == (
        "# Ansible managed\n"
        "Types: deb\n"
        "URIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/\n"
        "Suites: /\n"
        f"Signed-By: /etc/apt/keyrings/{sources[0]['name']}.asc\n"
    )
    assert "Components: contrib non-free non-free-firmware\n" in render(template, **entries[1]["vars"])
