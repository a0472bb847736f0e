"""gpulab.cluster.packages: dpkg asked with plain names (pins judged here, not by dpkg), apt needed
where a package is missing or off its pin, where the lists are stale, or where only apt can judge; in
check mode apt-get's simulation run here instead of apt, and stale lists no reason for apt."""

from pathlib import Path
from unittest import mock

from ansible_collections.gpulab.cluster.plugins.modules import packages

FIXTURES = Path(__file__).parents[2] / "fixtures/apt_status"
QUERY = (FIXTURES / "dpkg-query.txt").read_text()
SIMULATED = (FIXTURES / "simulate-install-debian12.txt").read_text()
NOT_FOUND = "E: Version '9.9' for 'jq' was not found\nE: Unable to locate package nosuchpkg\n"


def dpkg(asked, apt_get=(0, SIMULATED, "")):
    """dpkg-query answers from the fixture; apt-get with `apt_get`."""

    def run(_module, argv, **_kwargs):
        asked.append(argv)
        return (0, QUERY, "") if argv[0] == "dpkg-query" else apt_get

    return run


def judge(run_module, args, lists_age=60.0, check_mode=False):
    asked = []
    with mock.patch.object(packages, "lists_age", return_value=lists_age):
        result, failed = run_module(packages.main, args, run_command=dpkg(asked), check_mode=check_mode)
    assert not failed, result
    return result, asked


def test_installed_at_their_pins_and_lists_current_needs_no_apt(run_module):
    args = {"name": ["ceph-common", "libnccl2=2.21.5-1+cuda12.4"], "update_cache": True, "cache_valid_time": 3600}
    result, asked = judge(run_module, args)
    assert asked == [["dpkg-query", "-W", f"-f={packages.apt_status.QUERY_FORMAT}", "--", "ceph-common", "libnccl2"]]
    assert (result["changed"], result["needs_apt"], result["missing"]) == (False, False, [])
    assert result["why"] == "every package installed and apt's lists current"
    # What a role would otherwise ask dpkg again: the versions installed, and which of them are held.
    assert result["installed"] == {"ceph-common": "16.2.15+ds-0+deb12u1", "libnccl2": "2.21.5-1+cuda12.4"}
    assert result["held"] == ["libnccl2"]


def test_a_package_off_its_pin_or_missing_needs_apt(run_module):
    result, _asked = judge(run_module, {"name": ["libnccl2=2.20.5-1+cuda12.2", "tang"]})
    assert result["needs_apt"] and result["missing"] == ["libnccl2=2.20.5-1+cuda12.2", "tang"]
    assert result["why"] == "to install: libnccl2=2.20.5-1+cuda12.2, tang"


def test_stale_lists_need_apt_even_with_everything_installed(run_module):
    result, _asked = judge(
        run_module, {"name": ["ceph-common"], "update_cache": True, "cache_valid_time": 3600}, 7200.0
    )
    assert result["needs_apt"] and result["missing"] == [] and result["why"] == "apt's lists to update"


def test_lists_stay_valid_for_an_hour_unless_the_task_says_otherwise(run_module):
    for age, stale in ((3500.0, False), (3700.0, True)):
        result, _asked = judge(run_module, {"name": ["ceph-common"], "update_cache": True}, age)
        assert result["needs_apt"] is stale, (age, result)
    result, _asked = judge(run_module, {"name": ["ceph-common"], "update_cache": True, "cache_valid_time": 0}, 5.0)
    assert result["needs_apt"] and result["why"] == "apt's lists to update"


def test_what_only_apt_can_judge_goes_to_apt(run_module):
    result, asked = judge(run_module, {"name": ["./local.deb"]})
    assert (result["needs_apt"], asked, result["installed"], result["held"]) == (True, [], {}, [])
    # latest and absent: dpkg is still asked, for what is installed now.
    result, asked = judge(run_module, {"name": ["nvidia-smi", "tang"], "state": "latest"})
    assert result["needs_apt"] and len(asked) == 1 and result["why"] == "state latest: only apt can judge"
    assert (result["installed"], result["held"]) == ({"nvidia-smi": "535.247.01-1~deb12u1"}, ["nvidia-smi"])


def test_check_mode_simulates_the_missing_packages_with_the_tasks_options_and_reports_them(run_module):
    args = {
        "name": ["ceph-common", "jq", "libnccl2=2.20.5-1+cuda12.2"],
        "install_recommends": False,
        "allow_downgrade": True,
        "_ansible_diff": True,
    }
    result, asked = judge(run_module, args, check_mode=True)
    assert asked[1] == [
        "apt-get",
        "-y",
        "-q",
        "--simulate",
        "-o",
        "APT::Install-Recommends=no",
        "--allow-downgrades",
        "install",
        "jq",
        "libnccl2=2.20.5-1+cuda12.2",
    ]
    assert (result["changed"], result["simulated"], result["needs_apt"]) == (True, True, True)
    assert result["would_install"][:3] == [
        "chrony 4.3-2+deb12u3",
        "libsctp1 1.0.19+dfsg-2",
        "libssl3 3.0.20-1~deb12u2 -> 3.0.22-1~deb12u2",
    ]
    assert len(result["would_install"]) == 9 and "Inst " not in result["diff"]["prepared"]
    prepared = result["diff"]["prepared"].splitlines()
    assert prepared[0] == "The following additional packages will be installed:", prepared
    assert prepared[-3:] == [
        "The following packages will be upgraded:",
        "  libssl3 openssl",
        "2 upgraded, 7 newly installed, 0 to remove and 18 not upgraded.",
    ]


def test_check_mode_fails_naming_what_apt_get_cannot_install(run_module):
    asked = []
    with mock.patch.object(packages, "lists_age", return_value=60.0):
        result, failed = run_module(
            packages.main,
            {"name": ["jq=9.9", "nosuchpkg"]},
            run_command=dpkg(asked, (100, "", NOT_FOUND)),
            check_mode=True,
        )
    assert failed and result["msg"] == (
        "apt-get cannot install jq=9.9, nosuchpkg: E: Version '9.9' for 'jq' was not found; "
        "E: Unable to locate package nosuchpkg"
    )


def test_check_mode_leaves_stale_lists_and_star_pins_to_apt_rules(run_module):
    # apt does not update its lists in check mode: with everything installed there is nothing for it to do.
    result, asked = judge(run_module, {"name": ["ceph-common"], "update_cache": True}, 7200.0, check_mode=True)
    assert (result["changed"], result["needs_apt"], result["simulated"], len(asked)) == (False, False, False, 1)
    assert result["why"] == "every package installed; apt's lists are stale, and check mode does not update them"
    # A pin with * is matched as the apt module matches it: apt simulates it.
    result, asked = judge(run_module, {"name": ["libnccl2=2.20*"]}, check_mode=True)
    assert (result["needs_apt"], result["simulated"], len(asked)) == (True, False, 1)
