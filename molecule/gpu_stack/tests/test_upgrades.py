"""Driver upgrades as an operator runs them: a branch change in one tagged run, then a move within the branch.

Runs after test_gpu_stack.py (it changes gs-ib's branch).
"""

import re

import pytest
import testinfra

OLD = ["nvidia-tesla-470-smi", "libnvidia-tesla-470-ml1", "libnvidia-tesla-470-cuda1"]
NEW = ["nvidia-smi", "libnvidia-ml1", "libcuda1"]


@pytest.fixture(scope="module")
def gs_ib(request):
    return testinfra.get_host("ansible://gs-ib", ansible_inventory=request.config.option.ansible_inventory)


@pytest.fixture(scope="module")
def versions_535(gs_ib):
    """Upstream 535 versions the mirror offers, oldest first (Debian keeps the point release and the security one)."""
    madison = gs_ib.check_output("apt-cache madison nvidia-smi")
    found = set(re.findall(r"\|\s*(535\.[0-9.]+)-", madison))
    assert found, madison
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def driver_run(ansible_playbook, version):
    return ansible_playbook(
        "playbooks/gpu_stack.yml", "--limit", "gs-ib", "--tags", "nvidia_driver",
        "-e", "nvidia_driver_branch=535", "-e", f"nvidia_driver_version={version}",
    )  # fmt: skip


def installed_version(host, package):
    return host.check_output(f"dpkg-query --show --showformat='${{Version}}' {package}")


def test_branch_change_in_one_run_then_nothing_to_do(ansible_playbook, gs_ib, versions_535):
    pin = versions_535[0]  # the oldest: only the pin makes apt choose it over the newest
    run = driver_run(ansible_playbook, pin)
    assert run.returncode == 0, run.stdout[-3000:]
    for package in OLD:
        assert not gs_ib.package(package).is_installed, package
    for package in NEW:
        assert installed_version(gs_ib, package).startswith(pin + "-"), package
    holds = set(gs_ib.check_output("apt-mark showhold").split())
    assert set(NEW) <= holds and not set(OLD) & holds
    assert gs_ib.file("/etc/apt/preferences.d/gpulab-nvidia-driver").contains(f"^Pin: version {re.escape(pin)}-\\*$")
    # The toolkit, which needs a libcuda, stayed.
    assert gs_ib.package("nvidia-cuda-toolkit").is_installed

    again = driver_run(ansible_playbook, pin)
    assert again.returncode == 0
    assert re.search(r"gs-ib\s+: ok=\d+\s+changed=0 ", again.stdout), again.stdout[-2000:]


def test_moving_the_pin_within_the_branch_upgrades_held_packages(ansible_playbook, gs_ib, versions_535):
    if len(versions_535) < 2:
        pytest.skip(f"the mirror offers one 535 release only ({versions_535[0]})")
    newest = versions_535[-1]
    run = driver_run(ansible_playbook, newest)
    assert run.returncode == 0, run.stdout[-3000:]
    for package in NEW:
        assert installed_version(gs_ib, package).startswith(newest + "-"), package
    assert set(NEW) <= set(gs_ib.check_output("apt-mark showhold").split())
