"""The RoCE QoS commands the rdma role writes (no DCB-capable NIC on the build machines to run them)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.filter.rdma_qos import roce_qos, roce_qos_commands

PLAN = {"fabric": "roce", "roce": {"pfc_priority": 3, "dscp": 26}}


def test_tos_is_dscp_shifted_with_ect0():
    assert roce_qos(PLAN) == {"priority": 3, "dscp": 26, "ecn": True, "tos": 106}
    assert roce_qos({"roce": {"dscp": 26, "ecn": False}})["tos"] == 104
    assert roce_qos({"roce": {}}) == {"priority": 3, "dscp": 26, "ecn": True, "tos": 106}  # the handbook's defaults
    with pytest.raises(AnsibleFilterError, match="gpulab_network.roce.ecn must be true or false, got 'yes'"):
        roce_qos({"roce": {"ecn": "yes"}})


def test_dcb_commands():
    lines = roce_qos_commands(PLAN, "enp65s0f0np0")
    assert lines[:2] == [
        "dcb pfc set dev enp65s0f0np0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off",
        "dcb app replace dev enp65s0f0np0 dscp-prio 26:3",
    ]
    assert "/sys/class/net/enp65s0f0np0/ecn/$role/enable/3" in lines[2]
    assert lines[3] == ('dev=$(rdma link show | awk \'$NF == "enp65s0f0np0" { split($2, p, "/"); print p[1] }\')')
    assert lines[-2:] == [
        'echo 106 > "$cm/ports/1/default_roce_tos"',
        'echo "RoCE v2" > "$cm/ports/1/default_roce_mode"',
    ]


def test_mlnx_qos_commands_on_another_priority_without_ecn():
    plan = {"roce": {"pfc_priority": 5, "dscp": 46, "ecn": False}}
    lines = roce_qos_commands(plan, "eth2", tool="mlnx_qos")
    assert lines[:3] == [
        "mlnx_qos -i eth2 --trust dscp",
        "mlnx_qos -i eth2 --pfc 0,0,0,0,0,1,0,0",
        "mlnx_qos -i eth2 --dscp2prio set,46,5",
    ]
    assert not any("ecn" in line for line in lines)
    assert 'echo 184 > "$cm/ports/1/default_roce_tos"' in lines


def test_no_dcb_tool_sets_only_ecn_where_present_and_rdma_cm():
    lines = roce_qos_commands(PLAN, "eth1", tool="none")
    assert not any(line.startswith(("dcb ", "mlnx_qos ")) for line in lines)
    assert lines[0].startswith("for role in roce_np roce_rp; do f=/sys/class/net/eth1/ecn/$role/enable/3;")
    assert lines[-2:] == [
        'echo 106 > "$cm/ports/1/default_roce_tos"',
        'echo "RoCE v2" > "$cm/ports/1/default_roce_mode"',
    ]


@pytest.mark.parametrize(
    ("plan", "tool", "message"),
    [
        (PLAN, "lldptool", "rdma_qos_tool must be one of dcb, mlnx_qos, none; got 'lldptool'"),
        ({"roce": {"pfc_priority": 8}}, "dcb", "pfc_priority 8"),
    ],
)
def test_refusals(plan, tool, message):
    with pytest.raises(AnsibleFilterError, match=message):
        roce_qos_commands(plan, "eth2", tool=tool)
