"""Preflight's two sysfs probes (nvidia_driver's find_gpus and the fabric NIC's link), run by bash on a fake
/sys laid out as Linux lays it out, and what preflight makes of their output."""

import subprocess
from pathlib import Path

import yaml

from ansible_collections.gpulab.cluster.plugins.filter.preflight import preflight_link_warnings

ROOT = Path(__file__).resolve().parents[2]


def shell_of(path, name):
    tasks = yaml.safe_load((ROOT / path).read_text())
    plays = tasks if "hosts" not in tasks[0] else tasks[0]["tasks"]
    return next(t for t in plays if t["name"] == name)["ansible.builtin.shell"]


def run(script, sysfs):
    done = subprocess.run(
        ["bash", "-c", script.replace("/sys/", f"{sysfs}/sys/")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def device(root, relative, **files):
    path = root / relative
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).write_text(text + "\n")


def test_find_gpus_lists_each_gpu_with_its_link_and_numa_node(tmp_path):
    pci = Path("sys/bus/pci/devices")
    link = {"current_link_width": "8", "max_link_width": "16", "numa_node": "1"}
    device(tmp_path, pci / "0000:41:00.0", vendor="0x10de", **{"class": "0x030000"}, **link)  # GeForce: VGA
    device(tmp_path, pci / "0000:41:00.1", vendor="0x10de", **{"class": "0x040300"}, **link)  # its HDMI audio
    device(tmp_path, pci / "0000:c1:00.0", vendor="0x10de", **{"class": "0x030200"})  # 3D, no link files
    device(tmp_path, pci / "0000:02:00.0", vendor="0x15b3", **{"class": "0x020000"}, **link)  # a ConnectX NIC
    script = shell_of("roles/nvidia_driver/tasks/find_gpus.yml", "Look for NVIDIA GPUs on the PCI bus")
    assert run(script, tmp_path) == ["0000:41:00.0 8 16 1", "0000:c1:00.0 ? ? ?"]


def test_the_fabric_nic_probe_reads_its_link_and_a_virtual_nic_says_nothing(tmp_path):
    net = Path("sys/class/net")
    speed = {"current_link_speed": "8.0 GT/s PCIe"}
    device(tmp_path, net / "enp65s0f0np0/device", current_link_width="8", numa_node="0", **speed)
    (tmp_path / net / "veth0").mkdir()
    script = shell_of("playbooks/preflight.yml", "Read the PCIe link of the NIC that carries the fabric")
    nic = run(script.replace("{{ __gpulab_fabric_nic | quote }}", "enp65s0f0np0"), tmp_path)
    assert nic == ["8 8.0 0"]
    assert run(script.replace("{{ __gpulab_fabric_nic | quote }}", "veth0"), tmp_path) == []

    hostvars = {
        "gpu1": {
            "__nvidia_driver_gpus": {"stdout_lines": ["0000:41:00.0 16 16 1"]},
            "__gpulab_fabric_link": {"stdout": nic[0]},
        }
    }
    assert preflight_link_warnings(hostvars, ["gpu1"], {"fabric": "roce", "link_speed_gbps": 100}) == [
        "gpu1: the fabric NIC's link: a PCIe gen 3 x8 slot carries 63 Gb/s, short of the NIC's 100 Gb/s port: "
        "put it in an x16 slot (or gen 4 x8)",
        "gpu1: GPUs on NUMA node(s) [1], the NIC on 0: their traffic crosses the CPU link; one NIC per NUMA node, "
        "or set NCCL to the near one",
    ]
