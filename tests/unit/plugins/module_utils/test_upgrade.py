from pathlib import Path

from ansible_collections.gpulab.cluster.plugins.module_utils import upgrade

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "upgrade"


def simulated(name):
    return upgrade.parse_apt_simulation((FIXTURES / name).read_text())


def test_recorded_full_upgrade_lists_every_package_with_both_versions():
    pending = simulated("apt-s-dist-upgrade-bookworm.txt")  # apt said "141 upgraded, 0 newly installed"
    assert len(pending) == 141
    assert pending[0] == {"package": "base-files", "installed": "12.4+deb12u11", "candidate": "12.4+deb12u15"}
    by_name = {p["package"]: p for p in pending}
    assert by_name["tzdata"] == {"package": "tzdata", "installed": "2025b-0+deb12u2", "candidate": "2026f-0+deb12u1"}
    # A line ending in "[]" (a package that breaks another until both are in) parses the same.
    assert by_name["libssl3"]["candidate"] == "3.0.22-1~deb12u2"


def test_recorded_kernel_install_shows_new_packages_without_an_installed_version():
    pending = {p["package"]: p for p in simulated("apt-s-install-kernel-bookworm.txt")}
    assert pending["linux-image-6.1.0-57-amd64"] == {
        "package": "linux-image-6.1.0-57-amd64",
        "installed": None,
        "candidate": "6.1.192-3",
    }
    assert pending["systemd"]["installed"] == "252.38-1~deb12u1"


def test_nothing_to_upgrade():
    text = (
        "Reading package lists...\nCalculating upgrade...\n"
        "0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n"
    )
    assert upgrade.parse_apt_simulation(text) == []


def test_boot_kernel_is_the_newest_release_in_boot_compared_as_numbers():
    names = ["config-6.1.0-9-amd64", "vmlinuz-6.1.0-9-amd64", "vmlinuz-6.1.0-31-amd64", "initrd.img-6.1.0-31-amd64"]
    assert upgrade.boot_kernel(names) == "6.1.0-31-amd64"
    assert upgrade.boot_kernel(["grub", "System.map-6.1.0-9-amd64"]) is None  # a container's empty /boot


def test_reboot_reasons():
    assert upgrade.reboot_reasons("6.1.0-31-amd64", "6.1.0-31-amd64", "550.54.14", "550.54.14", False) == []
    assert upgrade.reboot_reasons("6.1.0-28-amd64", "6.1.0-31-amd64", None, None, False) == [
        "kernel 6.1.0-31-amd64 is installed, 6.1.0-28-amd64 runs"
    ]
    assert upgrade.reboot_reasons("6.1.0-31-amd64", "6.1.0-31-amd64", "535.183.01", "550.54.14", True) == [
        "NVIDIA module 550.54.14 is installed, 535.183.01 is loaded",
        "/run/reboot-required exists (a package asked for a reboot)",
    ]
    # No module loaded (no GPU, or the driver is not installed yet): nothing to compare.
    assert upgrade.reboot_reasons("6.1.0-31-amd64", None, None, "550.54.14", False) == []


def test_reboot_decision_never_reboots_a_container_but_says_why_it_would():
    assert upgrade.reboot_decision([], in_container=False) == {
        "reboot": False,
        "decision": "no reboot needed: the node runs what is installed",
    }
    reasons = ["kernel 6.1.0-31-amd64 is installed, 6.1.0-28-amd64 runs"]
    assert upgrade.reboot_decision(reasons, in_container=False) == {
        "reboot": True,
        "decision": "reboot: kernel 6.1.0-31-amd64 is installed, 6.1.0-28-amd64 runs",
    }
    decision = upgrade.reboot_decision(reasons, in_container=True)
    assert decision["reboot"] is False
    assert decision["decision"] == (
        "a reboot would be needed (kernel 6.1.0-31-amd64 is installed, 6.1.0-28-amd64 runs), "
        "but this is a container: it runs its host's kernel, so it is not rebooted"
    )


def installed_fixture():
    # dpkg-query -W -f '${Package}\t${Version}\t${db:Status-Status}\n' docker.io libc6 ... (rc 1: one unknown)
    return upgrade.parse_dpkg_query((FIXTURES / "dpkg-query-pins.txt").read_text())


def test_dpkg_query_keeps_installed_packages_only():
    installed = installed_fixture()
    assert installed["nvidia-smi"] == "535.247.01-1~deb12u1"
    assert installed["docker.io"] == "20.10.24+dfsg1-1+deb12u1+b6"
    assert "nvidia-tesla-470-smi" not in installed  # removed, its configuration files left
    assert len(installed) == 4


def test_wheel_version_from_site_packages_names():
    names = ["nvidia", "nvidia_nccl_cu12-2.21.5.dist-info", "pip-23.0.1.dist-info", "nvidia_nccl_cu11-2.19.3.dist-info"]
    assert upgrade.wheel_version(names, "nvidia-nccl-cu12") == "2.21.5"
    assert upgrade.wheel_version(names, "Nvidia.NCCL_cu11") == "2.19.3"
    assert upgrade.wheel_version(names, "nvidia-nccl-cu13") is None


DRIVER_PIN = {"role": "nvidia_driver", "version": r"^535\.261\.03(-|$)", "wanted": "nvidia_driver_version 535.261.03"}


def test_pin_moves_lists_unmet_pins_only():
    pins = [
        {**DRIVER_PIN, "package": "nvidia-smi"},  # installed at another version: moves
        {**DRIVER_PIN, "package": "libcuda1"},  # not installed: moves
        {"role": "nccl", "package": "libc6", "version": r"^2\.36-", "wanted": "libc6 2.36"},  # met
        {"role": "container_runtime", "package": "docker.io", "version": "", "wanted": "the newest"},
        {"role": "container_runtime", "package": "tzdata", "version": "", "wanted": "the newest"},
    ]
    pending = [{"package": "tzdata", "installed": "2025b-0+deb12u2", "candidate": "2026f-0+deb12u1"}]
    moves = upgrade.pin_moves(pins, installed_fixture(), pending)
    assert moves == [
        {
            "role": "nvidia_driver",
            "package": "nvidia-smi",
            "installed": "535.247.01-1~deb12u1",
            "wanted": "nvidia_driver_version 535.261.03",
            "version": r"^535\.261\.03(-|$)",
        },
        {
            "role": "nvidia_driver",
            "package": "libcuda1",
            "installed": None,
            "wanted": "nvidia_driver_version 535.261.03",
            "version": r"^535\.261\.03(-|$)",
        },
        # Unversioned: docker.io has no upgrade pending (met); tzdata has one, so it moves to apt's candidate.
        {
            "role": "container_runtime",
            "package": "tzdata",
            "installed": "2025b-0+deb12u2",
            "wanted": "2026f-0+deb12u1",
            "version": "",
        },
    ]


def test_a_pin_met_exactly_does_not_move_on_a_longer_version():
    # 535.261.03 must not be met by 535.261.030 or by 1535.261.03: the role's pattern is anchored.
    pins = [{**DRIVER_PIN, "package": "nvidia-smi"}]
    assert upgrade.pin_moves(pins, {"nvidia-smi": "535.261.03-1~deb12u1"}, []) == []
    assert len(upgrade.pin_moves(pins, {"nvidia-smi": "535.261.030-1"}, [])) == 1
