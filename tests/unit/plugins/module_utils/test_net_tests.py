from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import net_tests as nt

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "net"


def read(name):
    return (FIXTURES / name).read_text()


def test_iperf3_recorded_four_streams():
    found = nt.parse_iperf3(read("iperf3-3.12-P4.json"))
    assert found == {
        "sent_gbps": 14.117,
        "received_gbps": 14.116,
        "retransmits": 3370,
        "streams": 4,
        "seconds": 3.0,
    }


def test_iperf3_error_in_json_is_reported():
    with pytest.raises(nt.NetParseError, match="unable to connect to server: Connection timed out"):
        nt.parse_iperf3(read("iperf3-refused.json"))


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "not JSON"),
        ('{"start": {}, "intervals": [', "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"start": {}, "end": {}}', "did not finish"),
    ],
)
def test_iperf3_garbage_and_truncated(text, message):
    with pytest.raises(nt.NetParseError, match=message):
        nt.parse_iperf3(text)


def test_ping_ok_too_big_and_lost():
    assert nt.parse_ping(read("ping-ok.txt")) == {"transmitted": 3, "received": 3, "path_mtu": None}
    assert nt.parse_ping(read("ping-too-big.txt")) == {"transmitted": 3, "received": 0, "path_mtu": 1500}
    assert nt.parse_ping(read("ping-lost.txt")) == {"transmitted": 3, "received": 0, "path_mtu": None}
    # A router on the path answers "Frag needed" instead of the local stack refusing.
    routed = "From 10.0.0.1 icmp_seq=1 Frag needed and DF set (mtu = 1500)\n"
    assert nt.parse_ping(routed)["path_mtu"] == 1500
    with pytest.raises(nt.NetParseError):
        nt.parse_ping("ping: unknown host gpu9\n")


def test_ethtool_counters_and_deltas():
    counters = nt.parse_ethtool_stats(read("ethtool-veth.txt"))
    assert counters["rx_queue_0_drops"] == 0 and "NIC statistics" not in counters
    mlx = "     rx_pause_ctrl_phy: 10\n     rx_prio3_pause: 4\n     rx_discards_phy: 0\n"
    assert nt.counter_deltas({"a": 5, "b": 9}, {"a": 7, "b": 2, "c": 1}) == {"a": 2, "b": 0}
    assert nt.parse_ethtool_stats(mlx) == {"rx_pause_ctrl_phy": 10, "rx_prio3_pause": 4, "rx_discards_phy": 0}


def test_ping_payload_fills_the_mtu():
    assert nt.ping_payload(9000) == 8972 and nt.ping_payload(1500) == 1472


def test_evaluate_peer_records():
    iperf = nt.parse_iperf3(read("iperf3-3.12-P4.json"))
    ok = nt.evaluate_peer("gpu2", iperf, None, nt.parse_ping(read("ping-ok.txt")), None, 1500, 9.0)
    assert [(r.check, r.status, r.value, r.threshold) for r in ok] == [
        ("bandwidth.gpu2", "pass", 14.116, 9.0),
        ("mtu.gpu2", "pass", 1500, 1500),
    ]
    bad = nt.evaluate_peer("gpu2", iperf, None, nt.parse_ping(read("ping-too-big.txt")), None, 9000, 90.0)
    assert [(r.status, r.code) for r in bad] == [("fail", "NET_BW"), ("fail", "NET_MTU")]
    assert "a hop allows only 1500" in bad[1].message
    down = nt.evaluate_peer("gpu3", None, "refused", None, "no summary", 9000, None)
    assert [r.status for r in down] == ["fail", "fail"]
    assert down[0].message == "iperf3 to gpu3 failed: refused"
    unjudged = nt.evaluate_peer("gpu2", iperf, None, nt.parse_ping(read("ping-ok.txt")), None, 1500, None)
    assert unjudged[0].status == "pass" and unjudged[0].threshold is None


def test_link_and_counters():
    assert nt.evaluate_link("eth0", None, 100).status == "unavailable"
    assert nt.evaluate_link("eth0", 25000, 100).status == "fail"
    assert nt.evaluate_link("eth0", 100000, 100).value == 100
    warn, pauses = nt.evaluate_counters("eth0", {"rx_dropped": 3, "tx_errors": 0, "rx_prio3_pause": 7, "tx_pause": 2})
    assert (warn.status, warn.value) == ("warn", 3) and "rx_dropped +3" in warn.message
    assert pauses.value == 9
    assert nt.evaluate_counters("eth0", {})[0].status == "unavailable"
