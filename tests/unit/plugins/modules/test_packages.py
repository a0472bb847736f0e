"""gpulab.cluster.packages: dpkg asked with plain names (pins judged here, not by dpkg), apt needed
where a package is missing or off its pin, where the lists are stale, or where only apt can judge."""

from pathlib import Path
from unittest import mock

from ansible_collections.gpulab.cluster.plugins.modules import packages

QUERY = (Path(__file__).parents[2] / "fixtures/apt_status/dpkg-query.txt").read_text()


def dpkg(asked):
    def run(_module, argv, **_kwargs):
        asked.append(argv)
        return 0, QUERY, ""

    return run


def judge(run_module, args, lists_age=60.0):
    asked = []
    with mock.patch.object(packages, "lists_age", return_value=lists_age):
        result, failed = run_module(packages.main, args, run_command=dpkg(asked), check_mode=True)
    assert not failed, result
    return result, asked


def test_installed_at_their_pins_and_lists_current_needs_no_apt(run_module):
    args = {"name": ["ceph-common", "libnccl2=2.21.5-1+cuda12.4"], "update_cache": True, "cache_valid_time": 3600}
    result, asked = judge(run_module, args)
    assert asked == [["dpkg-query", "-W", f"-f={packages.apt_status.QUERY_FORMAT}", "--", "ceph-common", "libnccl2"]]
    assert (result["changed"], result["needs_apt"], result["missing"]) == (False, False, [])
    assert result["why"] == "every package installed and apt's lists current"


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


def test_what_only_apt_can_judge_goes_to_apt_without_asking_dpkg(run_module):
    for args in ({"name": ["ceph-common"], "state": "latest"}, {"name": ["./local.deb"]}):
        result, asked = judge(run_module, args)
        assert result["needs_apt"] and asked == [], args
