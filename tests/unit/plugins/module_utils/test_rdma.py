from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import rdma

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rdma"


def read(name):
    return (FIXTURES / name).read_text()


def test_ibv_devinfo_two_devices():
    found = rdma.parse_ibv_devinfo(read("ibv_devinfo-mlx5-rxe.txt"))
    assert found == {
        "mlx5_0": {1: {"state": "PORT_ACTIVE", "max_mtu": "4096", "active_mtu": "4096", "link_layer": "Ethernet"}},
        "rxe0": {1: {"state": "PORT_ACTIVE", "max_mtu": "4096", "active_mtu": "1024", "link_layer": "Ethernet"}},
    }
    assert rdma.parse_ibv_devinfo("No IB devices found\n") == {}
    with pytest.raises(rdma.RdmaParseError):
        rdma.parse_ibv_devinfo("Segmentation fault\n")


def test_sysfs_values():
    assert rdma.sysfs_state("4: ACTIVE\n") == "ACTIVE"
    assert rdma.sysfs_state("5: LinkUp") == "LinkUp"
    assert rdma.parse_rate("100 Gb/sec (2X HDR)") == 100.0
    assert rdma.parse_rate("2.5 Gb/sec (1X SDR)") == 2.5
    assert rdma.parse_rate("garbage") is None


GIDS = [
    {"index": 0, "gid": "fe80:0000:0000:0000:5054:00ff:fe12:3456", "type": "IB/RoCE v1", "ndev": "eth1"},
    {"index": 1, "gid": "fe80:0000:0000:0000:5054:00ff:fe12:3456", "type": "RoCE v2", "ndev": "eth1"},
    {"index": 2, "gid": "0000:0000:0000:0000:0000:ffff:0a00:1415", "type": "IB/RoCE v1", "ndev": "eth1"},
    {"index": 3, "gid": "0000:0000:0000:0000:0000:ffff:0a00:1415", "type": "RoCE v2", "ndev": "eth1"},
    {"index": 5, "gid": "0000:0000:0000:0000:0000:ffff:0a00:1e15", "type": "RoCE v2", "ndev": "eth1.30"},
]


def test_roce_v2_gid_picks_the_ipv4_v2_entry_on_the_netdev():
    assert rdma.roce_v2_gid(GIDS)["index"] == 3
    assert rdma.roce_v2_gid(GIDS, "eth1.30") == {**GIDS[4], "ipv4": "10.0.30.21"}
    assert rdma.roce_v2_gid(GIDS[:3]) is None
    assert rdma.roce_v2_gid(GIDS, "eth9") is None


def test_dcb_and_mlnx_qos():
    assert rdma.parse_dcb_pfc(read("dcb-pfc-prio3.json")) == [3]
    assert rdma.parse_dcb_pfc('{"prio_pfc": {"0": false, "3": true, "4": true}}') == [3, 4]
    assert rdma.parse_dcb_app(read("dcb-app-dscp.json")) == {24: 3, 26: 3, 48: 6}
    with pytest.raises(rdma.RdmaParseError, match="no prio_pfc"):
        rdma.parse_dcb_pfc('{"pfc_cap": 8}')
    with pytest.raises(rdma.RdmaParseError, match="not JSON"):
        rdma.parse_dcb_pfc("Attribute read: Operation not supported")
    qos = rdma.parse_mlnx_qos(read("mlnx_qos-dscp-pfc3.txt"))
    assert qos["trust"] == "dscp" and qos["pfc"] == [3]
    assert qos["dscp_prio"][26] == 3 and qos["dscp_prio"][0] == 0 and len(qos["dscp_prio"]) == 64
    with pytest.raises(rdma.RdmaParseError):
        rdma.parse_mlnx_qos("mlnx_qos: command failed\n")


def test_evaluate_qos():
    ok = rdma.evaluate_qos([3], {26: 3}, "dscp", 3, 26, "dcb")
    assert [(r.check, r.status) for r in ok] == [("pfc", "pass"), ("dscp", "pass")]
    qos = rdma.parse_mlnx_qos(read("mlnx_qos-pcp-nopfc.txt"))
    off = rdma.evaluate_qos(qos["pfc"], qos["dscp_prio"], qos["trust"], 3, 26, "mlnx_qos")
    assert [(r.check, r.status, r.code) for r in off] == [("pfc", "fail", "RDMA_PFC")]
    mixed = rdma.evaluate_qos([3, 4], {26: 0}, "pcp", 3, 26, "mlnx_qos")
    assert [(r.check, r.status) for r in mixed] == [
        ("pfc", "pass"),
        ("pfc_other", "warn"),
        ("trust", "fail"),
        ("dscp", "fail"),
    ]
    unread = rdma.evaluate_qos(None, None, None, 3, 26, "dcb pfc on eth1 failed")
    assert [(r.status, r.code) for r in unread] == [("fail", "RDMA_PFC_UNREAD")]
    assert unread[0].message.startswith("dcb pfc on eth1 failed: PFC state could not be read, and RoCE needs PFC")


def test_evaluate_port():
    port = {
        "state": "ACTIVE",
        "phys_state": "LinkUp",
        "link_layer": "Ethernet",
        "active_mtu": "1024",
        "rate_gbps": 10.0,
    }
    records = rdma.evaluate_port("rxe0", 1, port, "Ethernet", 4096, 100)
    assert [(r.check, r.status) for r in records] == [
        ("port_state.rxe0/1", "pass"),
        ("link_layer.rxe0/1", "pass"),
        ("active_mtu.rxe0/1", "fail"),
        ("rate.rxe0/1", "fail"),
    ]
    down = dict(port, state="DOWN", phys_state="Disabled", link_layer="InfiniBand")
    records = rdma.evaluate_port("mlx5_0", 1, down, "Ethernet", None, None)
    assert [(r.status, r.code) for r in records] == [("fail", "RDMA_PORT_DOWN"), ("fail", "RDMA_LINK_LAYER")]
