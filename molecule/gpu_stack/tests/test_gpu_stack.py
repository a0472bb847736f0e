"""The GPU stack as Debian 12 packages it: driver userspace, CUDA, NCCL, Docker, on two nodes."""

import json
import re
from pathlib import Path

import pytest
import testinfra

SCENARIO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def node(request):
    def get(name):
        return testinfra.get_host(f"ansible://{name}", ansible_inventory=request.config.option.ansible_inventory)

    return get


def version(host, package):
    return host.check_output(f"dpkg-query --show --showformat='${{Version}}' {package}")


def held(host):
    return set(host.check_output("apt-mark showhold").split())


def nccl_conf(host):
    """/etc/nccl.conf as a dict, comments and blank lines dropped."""
    lines = host.file("/etc/nccl.conf").content_string.splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


# Debian's driver flavours, as each node was converged: packages, version prefix.
DRIVER = {
    "gs-roce": (["nvidia-smi", "libnvidia-ml1", "libcuda1"], "535."),
    "gs-ib": (["nvidia-tesla-470-smi", "libnvidia-tesla-470-ml1", "libnvidia-tesla-470-cuda1"], "470."),
}


@pytest.mark.parametrize("name", sorted(DRIVER))
def test_driver_userspace_of_the_branch_installed_and_held(node, name):
    host = node(name)
    packages, prefix = DRIVER[name]
    for package in packages:
        assert version(host, package).startswith(prefix), package
    assert set(packages) <= held(host)
    assert host.package("nvidia-persistenced").is_installed
    # In a container the kernel module is never built: no DKMS package, no headers.
    assert not host.package("nvidia-kernel-dkms").is_installed
    assert not host.package("nvidia-tesla-470-kernel-dkms").is_installed
    blacklist = host.file("/etc/apt/apt.conf.d/51gpulab-nvidia-driver").content_string
    for package in packages:
        assert f'"^{re.escape(package)}$";' in blacklist
    record = json.loads(host.file("/var/lib/gpulab/nvidia-driver.json").content_string)
    assert record["packages"] == packages + ["nvidia-persistenced"]


def test_non_free_sources_added_and_nouveau_blacklisted(node):
    host = node("gs-roce")
    sources = host.file("/etc/apt/sources.list.d/gpulab-debian-nonfree.sources").content_string
    assert "Suites: bookworm bookworm-updates\n" in sources
    assert "Components: contrib non-free non-free-firmware\n" in sources
    assert sources.startswith("#\n# Ansible managed\n#\n")
    blacklist = host.file("/etc/modprobe.d/gpulab-blacklist-nouveau.conf").content_string
    assert "\nblacklist nouveau\n" in blacklist
    assert "options nouveau modeset=0" in blacklist


def test_persistenced_enabled_but_waits_for_the_driver(node):
    host = node("gs-roce")
    dropin = host.file("/etc/systemd/system/nvidia-persistenced.service.d/gpulab.conf").content_string
    assert "\nConditionPathExists=/dev/nvidiactl\n" in dropin
    assert host.service("nvidia-persistenced").is_enabled
    assert host.check_output("systemctl show -p ConditionResult --value nvidia-persistenced") in ("no", "")
    assert not host.service("nvidia-persistenced").is_running


def test_nvidia_smi_is_the_real_binary_without_a_gpu(node):
    # Debian's nvidia-smi runs and says why it cannot reach a driver (no GPU, no module).
    # NVML creates /dev/nvidiactl when it may: remove what this test made.
    host = node("gs-roce")
    before = host.file("/dev/nvidiactl").exists
    # nvidia-smi exits 255 here, which testinfra's SSH backend takes for a failed connection: any failure counts.
    result = host.run("nvidia-smi || exit 1")
    if not before:
        host.run("rm -f /dev/nvidiactl")
    assert result.rc != 0
    assert "NVML" in result.stdout + result.stderr


def test_cuda_toolkit_pinned_held_and_on_path_for_login_shells(node):
    host = node("gs-ib")
    assert version(host, "nvidia-cuda-toolkit").startswith("11.8.")
    assert "nvidia-cuda-toolkit" in held(host)
    assert host.file("/etc/apt/preferences.d/gpulab-cuda").contains("^Pin: version 11.8.\\*$")
    login = host.check_output("bash -lc 'echo $CUDA_HOME; command -v nvcc; nvcc --version'")
    assert login.splitlines()[0] == "/usr/lib/nvidia-cuda-toolkit"
    assert "release 11.8, V11.8" in login


def test_a_node_without_the_toolkit_gets_nothing_of_it(node):
    host = node("gs-roce")  # cuda_install_toolkit: false
    assert not host.package("nvidia-cuda-toolkit").is_installed
    for path in (
        "/etc/apt/preferences.d/gpulab-cuda",
        "/etc/profile.d/gpulab-cuda.sh",
        "/etc/ld.so.conf.d/gpulab-cuda.conf",
    ):
        assert not host.file(path).exists, path


def test_nccl_conf_for_the_roce_plan(node):
    assert nccl_conf(node("gs-roce")) == {
        "NCCL_SOCKET_IFNAME": "enp65s0f0np0.20",
        "NCCL_IB_HCA": "=mlx5_0",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "106",
        "NCCL_BUFFSIZE": "8388608",
        "NCCL_DEBUG": "WARN",
    }
    text = node("gs-roce").file("/etc/nccl.conf").content_string
    assert (
        "# traffic class = DSCP 26 << 2 with ECN-capable transport, as RDMA-CM's and the switch's: PFC priority 3\n"
        "NCCL_IB_TC=106\n"
    ) in text


def test_nccl_conf_for_the_infiniband_plan(node):
    assert nccl_conf(node("gs-ib")) == {
        "NCCL_SOCKET_IFNAME": "ib0",
        "NCCL_IB_HCA": "=mlx5_0,mlx5_1",
        "NCCL_IB_SL": "1",
        "NCCL_BUFFSIZE": "8388608",
        "NCCL_DEBUG": "WARN",
    }


def test_pinned_nccl_loads_and_reports_its_version(node):
    host = node("gs-roce")
    assert "/opt/gpulab/nccl/nccl/lib/libnccl.so.2" in host.check_output("ldconfig -p")
    # ncclGetVersion needs no GPU: the library the linker finds is the pinned 2.21.5.
    code = (
        "import ctypes; lib = ctypes.CDLL('libnccl.so.2'); v = ctypes.c_int(); "
        "assert lib.ncclGetVersion(ctypes.byref(v)) == 0; print(v.value)"
    )
    assert host.check_output(f'python3 -c "{code}"') == "22105"


def test_docker_runs_with_its_data_root_where_asked(node):
    host = node("gs-roce")
    assert host.service("docker").is_running
    assert json.loads(host.file("/etc/docker/daemon.json").content_string) == {"data-root": "/srv/docker"}
    assert host.check_output("docker info --format '{{.DockerRootDir}}'") == "/srv/docker"
