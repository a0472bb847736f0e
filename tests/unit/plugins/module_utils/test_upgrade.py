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
