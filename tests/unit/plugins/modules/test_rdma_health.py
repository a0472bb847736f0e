from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.modules import rdma_health

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rdma"


def fake_port(root, device, state="4: ACTIVE", gids=()):
    port = root / device / "ports" / "1"
    (port / "gids").mkdir(parents=True)
    (port / "gid_attrs" / "types").mkdir(parents=True)
    (port / "gid_attrs" / "ndevs").mkdir(parents=True)
    (port / "state").write_text(state + "\n")
    (port / "phys_state").write_text("5: LinkUp\n")
    (port / "link_layer").write_text("Ethernet\n")
    (port / "rate").write_text("100 Gb/sec (2X HDR)\n")
    for index, (gid, kind, ndev) in enumerate(gids):
        (port / "gids" / str(index)).write_text(gid + "\n")
        (port / "gid_attrs" / "types" / str(index)).write_text(kind + "\n")
        (port / "gid_attrs" / "ndevs" / str(index)).write_text(ndev + "\n")
    (port / "gids" / str(len(gids))).write_text(rdma_health.rdma.ZERO_GID + "\n")


def tools(found):
    return lambda self, name, *a, **k: found.get(name)


def test_roce_port_gid_and_qos_pass(run_module, monkeypatch, tmp_path):
    v4 = "0000:0000:0000:0000:0000:ffff:0a00:1415"
    fake_port(tmp_path, "mlx5_0", gids=[(v4, "IB/RoCE v1", "eth1"), (v4, "RoCE v2", "eth1")])
    monkeypatch.setattr(rdma_health, "SYS_INFINIBAND", str(tmp_path))
    monkeypatch.setattr(
        rdma_health.AnsibleModule, "get_bin_path", tools({"ibv_devinfo": "/usr/bin/ibv_devinfo", "dcb": "/sbin/dcb"})
    )

    def run(module, cmd, **kw):
        if cmd[0] == "/usr/bin/ibv_devinfo":
            return 0, (FIXTURES / "ibv_devinfo-mlx5-rxe.txt").read_text(), ""
        if cmd[2] == "pfc":
            assert cmd == ["/sbin/dcb", "-j", "pfc", "show", "dev", "eth1"]
            return 0, (FIXTURES / "dcb-pfc-prio3.json").read_text(), ""
        return 0, (FIXTURES / "dcb-app-dscp.json").read_text(), ""

    result, failed = run_module(rdma_health.main, {"min_rate_gbps": 100}, run_command=run, check_mode=True)
    assert not failed, result
    assert [(c["check"], c["status"]) for c in result["checks"]] == [
        ("port_state.mlx5_0/1", "pass"),
        ("link_layer.mlx5_0/1", "pass"),
        ("active_mtu.mlx5_0/1", "pass"),
        ("rate.mlx5_0/1", "pass"),
        ("roce_v2_gid", "pass"),
        ("pfc", "pass"),
        ("dscp", "pass"),
    ]
    assert result["gid_index"] == 1
    assert result["ports"][0]["netdev"] == "eth1" and result["ports"][0]["active_mtu"] == "4096"


def test_down_port_without_ipv4_gid_and_no_dcb(run_module, monkeypatch, tmp_path):
    fake_port(
        tmp_path, "mlx5_0", state="1: DOWN", gids=[("fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2", "eth1")]
    )
    monkeypatch.setattr(rdma_health, "SYS_INFINIBAND", str(tmp_path))
    monkeypatch.setattr(rdma_health.AnsibleModule, "get_bin_path", tools({"dcb": "/sbin/dcb"}))

    def run(module, cmd, **kw):
        return 1, "", "Attribute read: Operation not supported"

    result, failed = run_module(rdma_health.main, {"fail_on": "never"}, run_command=run)
    assert not failed
    checks = {c["check"]: c for c in result["checks"]}
    assert checks["port_state.mlx5_0/1"]["status"] == "fail"
    assert checks["active_mtu.mlx5_0/1"]["status"] == "unavailable"
    assert checks["roce_v2_gid"]["code"] == "RDMA_NO_GID"
    assert checks["pfc"]["status"] == "fail" and "no DCB support" in checks["pfc"]["message"]
    assert result["gid_index"] is None


def test_no_rdma_device_is_unavailable_not_a_fault(run_module, monkeypatch, tmp_path):
    monkeypatch.setattr(rdma_health, "SYS_INFINIBAND", str(tmp_path / "missing"))
    result, failed = run_module(rdma_health.main, {"fail_on": "warn"})
    assert not failed
    assert result["status"] == "unavailable" and result["checks"][0]["code"] == "RDMA_NO_DEVICE"


def test_a_declared_fabric_without_a_device_fails(run_module, monkeypatch, tmp_path):
    monkeypatch.setattr(rdma_health, "SYS_INFINIBAND", str(tmp_path / "missing"))
    for fabric in ("roce", "infiniband"):
        result, failed = run_module(rdma_health.main, {"fabric": fabric})
        assert failed and result["status"] == "fail"
        (record,) = result["checks"]
        assert record["code"] == "RDMA_NO_DEVICE"
        assert record["message"].startswith(f"the plan's fabric is {fabric}, but no RDMA device on ")


def roce_node(monkeypatch, tmp_path, tool, outputs):
    """A RoCE port on eth1 whose QoS reads come from `tool` (dcb or mlnx_qos) with the given fixtures."""
    v4 = "0000:0000:0000:0000:0000:ffff:0a00:1415"
    fake_port(tmp_path, "mlx5_0", gids=[(v4, "RoCE v2", "eth1")])
    monkeypatch.setattr(rdma_health, "SYS_INFINIBAND", str(tmp_path))
    monkeypatch.setattr(rdma_health.AnsibleModule, "get_bin_path", tools({tool: f"/sbin/{tool}"}))

    def run(module, cmd, **kw):
        if tool == "mlnx_qos":
            return 0, (FIXTURES / outputs[0]).read_text(), ""
        return 0, (FIXTURES / outputs[0 if cmd[2] == "pfc" else 1]).read_text(), ""

    return run


@pytest.mark.parametrize(
    ("tool", "prio4", "prio3"),
    [
        ("dcb", ["dcb-pfc-prio4.json", "dcb-app-dscp-prio4.json"], ["dcb-pfc-prio3.json", "dcb-app-dscp.json"]),
        ("mlnx_qos", ["mlnx_qos-dscp-pfc4.txt"], ["mlnx_qos-dscp-pfc3.txt"]),
    ],
)
def test_pfc_and_dscp_are_held_to_the_plan(run_module, monkeypatch, tmp_path, tool, prio4, prio3):
    plan = {"fabric": "roce", "pfc_priority": 4, "roce_dscp": 26, "fail_on": "never"}
    result, _failed = run_module(
        rdma_health.main, plan, run_command=roce_node(monkeypatch, tmp_path / "a", tool, prio4)
    )
    qos = {c["check"]: c["status"] for c in result["checks"] if c["check"] in ("pfc", "dscp")}
    assert qos == {"pfc": "pass", "dscp": "pass"}, result["checks"]
    result, _failed = run_module(
        rdma_health.main, plan, run_command=roce_node(monkeypatch, tmp_path / "b", tool, prio3)
    )
    qos = {c["check"]: c["status"] for c in result["checks"] if c["check"] in ("pfc", "dscp")}
    assert qos == {"pfc": "fail"}, result["checks"]  # PFC off on the plan's priority: DSCP is not looked at
    assert "PFC is not enabled on priority 4" in result["checks"][-1]["message"]


def test_bad_input_is_refused(run_module):
    result, failed = run_module(rdma_health.main, {"pfc_priority": 9})
    assert failed and result["msg"] == "pfc_priority must be 0-7, got 9"
    result, failed = run_module(rdma_health.main, {"min_active_mtu": 9000})
    assert failed and result["msg"].startswith("min_active_mtu must be an IB MTU")
    result, failed = run_module(rdma_health.main, {"min_rate_gbps": -1})
    assert failed and result["msg"] == "min_rate_gbps must be greater than 0, got -1.0"
