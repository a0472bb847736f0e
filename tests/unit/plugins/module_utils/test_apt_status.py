"""apt_status: which wanted packages dpkg has installed (at their pin), and when apt would update its lists."""

import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import apt_status

# dpkg-query -W -f '${Package}\t${Version}\t${db:Status-Abbrev}\n' as a node prints it: installed,
# held, a multi-arch package twice, one removed with its configuration left, one half unpacked, one
# half configured, one dpkg knows but never installed.
QUERY = (Path(__file__).parents[2] / "fixtures/apt_status/dpkg-query.txt").read_text()


def test_only_fully_installed_packages_count():
    assert apt_status.installed(QUERY) == {
        "ceph-common": ["16.2.15+ds-0+deb12u1"],
        "libnccl2": ["2.21.5-1+cuda12.4"],
        "nvidia-smi": ["535.247.01-1~deb12u1"],
        "libc6": ["2.36-9+deb12u14", "2.36-9+deb12u14"],
    }


def test_held_packages_in_dpkgs_order():
    assert apt_status.held(QUERY) == ["libnccl2", "nvidia-smi"]


def test_nothing_missing_where_every_package_is_installed_or_held():
    specs = apt_status.parse_specs(["ceph-common", "libnccl2=2.21.5-1+cuda12.4", "nvidia-smi=535.247.*", "libc6"])
    assert apt_status.missing(specs, QUERY) == []


def test_missing_names_what_apt_must_install_or_move():
    specs = apt_status.parse_specs(
        ["nut-client", "slurmd", "prometheus", "sudo", "tang", "libnccl2=2.20.5-1+cuda12.2", "nvidia-smi=550.*"]
    )
    assert apt_status.missing(specs, QUERY) == [
        "nut-client",  # removed, configuration left
        "slurmd",  # unpacked, not configured
        "prometheus",  # configuration failed
        "sudo",  # known to dpkg, never installed
        "tang",  # unknown to dpkg
        "libnccl2=2.20.5-1+cuda12.2",  # another pin
        "nvidia-smi=550.*",
    ]


def test_names_the_fast_path_cannot_judge():
    assert apt_status.parse_specs(["./local.deb"]) is None
    assert apt_status.parse_specs(["libc6:amd64"]) is None
    assert apt_status.parse_specs(["python3>=3.11"]) is None
    assert apt_status.parse_specs(["linux-headers-6.1.0-28-amd64", "g++"]) == [
        ("linux-headers-6.1.0-28-amd64", None),
        ("g++", None),
    ]


def test_lists_are_stale_as_the_apt_module_judges_them():
    assert not apt_status.lists_stale(False, 3600, None)  # no update asked for
    assert not apt_status.lists_stale(True, 3600, 120.0)
    assert apt_status.lists_stale(True, 3600, 7200.0)
    assert apt_status.lists_stale(True, 0, 5.0)  # no cache_valid_time: apt updates every time
    assert apt_status.lists_stale(True, 3600, None)  # never updated


def test_the_shell_read_parses_into_dpkgs_answer_and_the_lists_age():
    stdout = f"{QUERY}gpulab-read 1 1765000000 1764998800\n"
    assert apt_status.parse_read(stdout) == ((1, QUERY, ""), 1200.0)
    # Lists never updated: no time after the clock.
    assert apt_status.parse_read("gpulab-read 0 1765000000\n") == ((0, "", ""), None)
    # Over SSH with a terminal, as Ansible asks for one where it may become another user.
    assert apt_status.parse_read(stdout.replace("\n", "\r\n")) == ((1, QUERY, ""), 1200.0)


def test_a_shell_read_that_did_not_finish_is_no_answer():
    for stdout in ("", QUERY, "gpulab-read 0\n", "gpulab-read 0 x 12\n", "gpulab-read 0 1 2 3\n"):
        assert apt_status.parse_read(stdout) is None, stdout


@pytest.mark.skipif(not shutil.which("dpkg-query"), reason="needs dpkg-query (Debian or Ubuntu)")
def test_the_shell_read_runs_in_sh_against_the_real_dpkg(tmp_path):
    # This machine's dpkg: one package every Debian has, one no archive has, a name the shell must quote.
    command = apt_status.read_command(["dpkg", "gpulab-no-such-package", "a;b"])
    reply = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, check=True)
    (rc, out, _err), age = apt_status.parse_read(reply.stdout)
    assert rc == 1 and list(apt_status.installed(out)) == ["dpkg"]
    assert age is None or age >= 0
    assert apt_status.verdict(PRESENT, False, [("dpkg", None)], (rc, out, ""), 60.0)["needs_apt"] is False


PRESENT = {"state": "present", "update_cache": True, "cache_valid_time": 3600}


def test_the_verdict_from_dpkgs_answer():
    specs = apt_status.parse_specs(["ceph-common", "libnccl2=2.21.5-*", "nut-client"])
    found = apt_status.verdict(PRESENT, False, specs, (1, QUERY, ""), 60.0)
    assert (found["needs_apt"], found["missing"], found["held"]) == (True, ["nut-client"], ["libnccl2"])
    assert found["installed"] == {"ceph-common": "16.2.15+ds-0+deb12u1", "libnccl2": "2.21.5-1+cuda12.4"}
    # Stale lists make apt run, except in check mode, which does not update them.
    settled = apt_status.verdict(PRESENT, True, specs[:2], (0, QUERY, ""), 7200.0)
    assert settled["needs_apt"] is False and "check mode does not update them" in settled["why"]
    failed = apt_status.verdict(PRESENT, False, specs, (2, "", "dpkg-query: error\n"), 60.0)
    assert failed["needs_apt"] and failed["why"] == "dpkg-query failed: dpkg-query: error"
