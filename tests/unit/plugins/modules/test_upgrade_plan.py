from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.modules import upgrade_plan

APT = (Path(__file__).resolve().parents[2] / "fixtures" / "upgrade" / "apt-s-dist-upgrade-bookworm.txt").read_text()


@pytest.fixture
def node(monkeypatch):
    """A node running 6.1.0-28 with 6.1.0-31 in /boot, NVIDIA 550.54.14 loaded and installed."""
    state = {"boot": ["vmlinuz-6.1.0-28-amd64", "vmlinuz-6.1.0-31-amd64", "grub"], "reboot_required": False}
    monkeypatch.setattr(upgrade_plan.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: f"/usr/bin/{name}")
    monkeypatch.setattr(upgrade_plan.platform, "release", lambda: "6.1.0-28-amd64")
    monkeypatch.setattr(upgrade_plan.os, "listdir", lambda path: state["boot"])
    monkeypatch.setattr(upgrade_plan.os.path, "exists", lambda path: state["reboot_required"])
    monkeypatch.setattr(upgrade_plan, "_read", lambda path: "550.54.14")
    return state


def commands(calls, apt=(0, APT, "")):
    def run(module, cmd, **kw):
        calls.append(cmd)
        if cmd[0].endswith("apt-get"):
            return apt
        return 0, "550.54.14\n", ""  # modinfo -F version nvidia

    return run


def test_pending_packages_and_a_newer_kernel_mean_a_reboot(run_module, node):
    calls = []
    result, failed = run_module(upgrade_plan.main, {}, run_command=commands(calls))
    assert not failed and not result["changed"]
    assert calls[0] == ["/usr/bin/apt-get", "-s", "-o", "Debug::NoLocking=true", "dist-upgrade"]
    assert len(result["pending"]) == 141
    assert (result["running_kernel"], result["boot_kernel"]) == ("6.1.0-28-amd64", "6.1.0-31-amd64")
    assert result["reboot"] is True
    assert result["reboot_reasons"] == ["kernel 6.1.0-31-amd64 is installed, 6.1.0-28-amd64 runs"]


def test_a_container_is_never_rebooted(run_module, node):
    result, _failed = run_module(upgrade_plan.main, {"in_container": True}, run_command=commands([]))
    assert result["reboot"] is False and result["reboot_reasons"]
    assert "but this is a container" in result["decision"]


def test_only_the_reboot_question(run_module, node):
    node["boot"] = ["vmlinuz-6.1.0-28-amd64"]
    calls = []
    result, _failed = run_module(upgrade_plan.main, {"packages": False}, run_command=commands(calls))
    assert all(not c[0].endswith("apt-get") for c in calls)
    assert result["pending"] == [] and result["reboot"] is False
    assert result["decision"] == "no reboot needed: the node runs what is installed"


def test_apt_failing_is_an_error_not_an_empty_plan(run_module, node):
    apt = (100, "", "E: Could not get lock /var/lib/dpkg/lock-frontend\n")
    result, failed = run_module(upgrade_plan.main, {}, run_command=commands([], apt=apt))
    assert failed
    assert result["msg"] == (
        "could not ask apt what an upgrade would change: apt-get -s exited 100: "
        "E: Could not get lock /var/lib/dpkg/lock-frontend"
    )
