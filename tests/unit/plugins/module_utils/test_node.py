"""The clock and link checks on recorded chronyc and ip output."""

import json
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import node

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "node"


def read(name):
    return (FIXTURES / name).read_text()


def test_tracking_is_read_with_the_sign_of_the_offset():
    assert node.parse_chrony_tracking(read("chronyc_tracking_synced.txt")) == {
        "reference": "AC1E0A0B (172.30.10.11)",
        "stratum": 11,
        "offset_s": -0.000001437,
        "leap": "Normal",
    }
    served = node.parse_chrony_tracking(read("chronyc_tracking_local_source.txt"))
    assert (served["reference"], served["stratum"], served["offset_s"]) == ("7F7F0101 ()", 10, 0.0)


def test_a_synchronised_clock_passes_with_its_offset_in_ms():
    record = node.clock_record(0, read("chronyc_tracking_synced.txt"), "", 50)
    assert (record.status, record.value, record.threshold, record.unit) == ("pass", -0.001, 50, "ms")
    assert record.message == "the clock is 0.001 ms slow of its time source (AC1E0A0B (172.30.10.11), stratum 11)"


def test_a_clock_off_by_more_than_the_limit_is_skewed():
    text = read("chronyc_tracking_synced.txt").replace("0.000001437 seconds slow", "2.500000000 seconds fast")
    record = node.clock_record(0, text, "", 50)
    assert (record.status, record.code, record.value) == ("fail", "CLOCK_SKEW", 2500.0)
    assert record.message.startswith("the clock is 2500 ms fast of its time source (AC1E0A0B (172.30.10.11)")
    assert "more than 50 ms" in record.message
    assert node.clock_record(0, text, "", 3000).status == "pass"


@pytest.mark.parametrize(
    ("rc", "out", "err", "message"),
    [
        (0, "chronyc_tracking_unsynced.txt", "", "chrony has no time source it trusts (reference 00000000 ())"),
        (1, "", "506 Cannot talk to daemon", "chronyd does not answer (506 Cannot talk to daemon)"),
        (124, "", "", "chronyd does not answer (exit 124)"),
        (0, "Reference ID : 1", "", "not chronyc tracking output"),
    ],
)
def test_a_clock_nothing_keeps_fails(rc, out, err, message):
    record = node.clock_record(rc, read(out) if out.endswith(".txt") else out, err, 50)
    assert (record.status, record.code) == ("fail", "CLOCK_UNSYNCED")
    assert record.message.startswith(message), record.message


def test_each_planned_link_is_found_with_its_mtu():
    addresses = node.parse_ip_addr(read("ip_addr.json"))
    assert addresses["172.30.10.13"] == ("eth0", 1500) and addresses["172.17.0.1"] == ("docker0", 1500)
    links = [
        {"traffic_class": "management", "address": "172.30.10.13", "mtu": 1500},
        {"traffic_class": "compute", "address": "172.30.20.13", "mtu": 9000},
    ]
    records = node.mtu_records(addresses, links)
    assert [(r.check, r.status, r.code) for r in records] == [
        ("mtu.management", "pass", None),
        ("mtu.compute", "fail", "NET_ADDRESS_MISSING"),
    ]
    assert records[1].message == "no interface holds this node's compute (172.30.20.13) address"


def test_a_link_with_another_mtu_fails_naming_both():
    links = json.loads(read("ip_addr.json"))
    next(link for link in links if link["ifname"] == "eth0")["mtu"] = 9000  # jumbo frames on this node alone
    addresses = node.parse_ip_addr(json.dumps(links))
    (record,) = node.mtu_records(addresses, [{"traffic_class": "management", "address": "172.30.10.13", "mtu": 1500}])
    assert (record.status, record.code, record.value, record.threshold) == ("fail", "NET_MTU", 9000, 1500)
    assert record.message.startswith("eth0 on management (172.30.10.13) has MTU 9000; the plan's is 1500")


def test_ip_output_that_is_not_json_is_refused():
    with pytest.raises(node.NodeParseError, match="not ip -j addr output"):
        node.parse_ip_addr("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536")
