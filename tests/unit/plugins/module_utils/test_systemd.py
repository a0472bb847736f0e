"""What the files module reads from `systemctl show` and what it decides a service needs."""

from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import systemd

SHOW = (Path(__file__).resolve().parents[2] / "fixtures" / "systemd" / "show-debian12.txt").read_text()


def unit(file_state="enabled", active="active", load="loaded"):
    return {"Id": "x", "LoadState": load, "ActiveState": active, "UnitFileState": file_state, "NeedDaemonReload": "no"}


def test_show_is_read_per_unit_in_the_order_asked():
    units = systemd.parse_show(SHOW, 5)
    assert [(u["Id"], u["LoadState"], u["ActiveState"], u["UnitFileState"]) for u in units] == [
        ("chrony.service", "loaded", "active", "enabled"),
        ("ssh.service", "loaded", "active", "enabled"),
        ("nosuch.service", "not-found", "inactive", ""),
        ("systemd-tmpfiles-clean.timer", "loaded", "active", "static"),
        ("getty@tty1.service", "masked", "inactive", "masked"),
    ]
    assert {u["NeedDaemonReload"] for u in units} == {"no"}


def test_show_output_that_does_not_match_the_question_is_refused():
    with pytest.raises(systemd.SystemdParseError, match="answered for 5 units, 4 asked"):
        systemd.parse_show(SHOW, 4)
    with pytest.raises(systemd.SystemdParseError, match="left out UnitFileState, NeedDaemonReload"):
        systemd.parse_show("Id=a.service\nLoadState=loaded\nActiveState=active\n", 1)
    with pytest.raises(systemd.SystemdParseError, match="not systemctl show output"):
        systemd.parse_show("Failed to connect to bus: No such file or directory\n", 1)


def test_plan_enables_starts_and_restarts_only_what_needs_it():
    services = [
        {"name": "ray-head", "restart_on": ["/etc/systemd/*"]},
        {"name": "sssd", "restart_on": ["*"]},
        {"name": "gpulab-cpu-governor.service", "start": False},
        {"name": "munge"},
        {"name": "chrony", "restart_on": ["/etc/chrony/*"]},
    ]
    units = [unit(), unit(), unit("disabled", "inactive"), unit("disabled", "failed"), unit("static", "inactive")]
    changed = ["/etc/gpulab/ray.env"]
    assert systemd.plan(services, units, changed) == [[], ["restart"], ["enable"], ["enable", "start"], ["start"]]
    assert systemd.plan(services, units, ["/etc/systemd/system/ray-head.service"])[0] == ["restart"]
    assert systemd.plan(services, [unit()] * 5, []) == [[], [], [], [], []]
    oneshot = [{"name": "gpulab-cpu-governor.service", "start": False, "restart_on": ["/etc/systemd/system/*"]}]
    unit_file = ["/etc/systemd/system/gpulab-cpu-governor.service"]
    assert systemd.plan(oneshot, [unit("enabled", "inactive")], unit_file) == [["restart"]]  # runs it again


def test_a_unit_not_found_or_masked_is_named():
    services = [{"name": "nosuch"}, {"name": "systemd-tmpfiles-clean.timer"}, {"name": "getty@tty1"}]
    units = systemd.parse_show(SHOW, 5)[2:]
    assert systemd.unit_problems(services, units) == ["nosuch: no such unit", "getty@tty1: the unit is masked"]


def test_only_unit_paths_ask_for_a_reload():
    assert systemd.needs_reload(["/etc/gpulab/ray.env", "/etc/systemd/system/chrony.service.d/gpulab.conf"])
    assert systemd.needs_reload(["/lib/systemd/system/x.service"])
    assert not systemd.needs_reload(["/etc/gpulab/ray.env", "/etc/systemd-like/x"])


def test_check_mode_takes_a_unit_not_found_for_one_a_package_would_bring():
    units = systemd.parse_show(SHOW, 5)[2:3]
    assert systemd.unit_problems([{"name": "nosuch"}], units, missing_ok=True) == []
    assert systemd.plan([{"name": "nosuch"}], units, []) == [["enable", "start"]]
