from pathlib import Path

import pytest
from ansible.module_utils import basic

from ansible_collections.gpulab.cluster.plugins.modules import node_health

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "node"
LINK = {"traffic_class": "management", "address": "172.30.10.13", "mtu": 1500}


@pytest.fixture
def bins(monkeypatch):
    found = {"chronyc": "/usr/bin/chronyc"}
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: found.get(name))
    return found


def answer(module, cmd, **kw):
    if cmd[2:] == ["/usr/bin/upsc", "ups@127.0.0.1"]:
        return 0, (FIXTURES.parent / "ups" / "upsc-usbhid-ups.txt").read_text(), ""
    if "chronyc" in cmd[2]:
        assert cmd == ["timeout", "10", "/usr/bin/chronyc", "-n", "tracking"]
        return 0, (FIXTURES / "chronyc_tracking_synced.txt").read_text(), ""
    assert cmd == ["ip", "-j", "addr", "show"]
    return 0, (FIXTURES / "ip_addr.json").read_text(), ""


def test_the_clock_and_each_link_are_records(run_module, bins):
    result, failed = run_module(node_health.main, {"links": [LINK]}, run_command=answer, check_mode=True)
    assert not failed and result["changed"] is False and result["status"] == "pass"
    assert [(r["check"], r["status"]) for r in result["checks"]] == [("clock", "pass"), ("mtu.management", "pass")]


def test_on_the_ups_host_the_ups_is_read(run_module, bins):
    bins["upsc"] = "/usr/bin/upsc"
    result, failed = run_module(node_health.main, {"ups": "ups@127.0.0.1", "fail_on": "never"}, run_command=answer)
    assert not failed and result["status"] == "fail"
    assert [(r["check"], r["status"], r["code"]) for r in result["checks"]] == [
        ("clock", "pass", None),
        ("ups", "fail", "UPS_ON_BATTERY"),
    ]
    del bins["upsc"]
    result, failed = run_module(node_health.main, {"ups": "ups@127.0.0.1", "fail_on": "never"}, run_command=answer)
    assert (result["checks"][1]["status"], result["checks"][1]["message"]) == (
        "unavailable",
        "upsc is not installed: the ups role is not applied here",
    )


def test_without_chrony_the_clock_is_unavailable_and_no_links_read_nothing(run_module, bins):
    bins.clear()
    result, failed = run_module(node_health.main, {}, run_command=answer)
    assert not failed
    assert [(r["check"], r["status"]) for r in result["checks"]] == [("clock", "unavailable")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"clock_offset_max_ms": -1}, "clock_offset_max_ms must be 0 or more, got -1.0"),
        ({"links": [dict(LINK, address="mgmt1")]}, "links[0].address must be an IP address, got 'mgmt1'"),
        ({"links": [dict(LINK, mtu=70000)]}, "links[0].mtu must be 68-65535, got 70000"),
    ],
)
def test_bad_input_is_refused_naming_it(run_module, bins, args, message):
    result, failed = run_module(node_health.main, args, run_command=answer)
    assert failed and result["msg"] == message
