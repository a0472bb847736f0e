"""RoCE quality of service as commands: PFC on the RoCE priority, DSCP mapped to it, ECN, and the
RDMA-CM defaults, for `dcb` (iproute2) or `mlnx_qos` (NVIDIA's tools), or `none` for a NIC
without DCB (Soft-RoCE's): the RDMA-CM defaults alone.

Pure, so the commands are unit-tested: the build machines have no DCB-capable NIC to run them on.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.module_utils import plan as plan_defaults

TOOLS = ("dcb", "mlnx_qos", "none")


def roce_qos(plan: dict[str, Any]) -> dict[str, Any]:
    """{priority, dscp, ecn, tos} of the plan's RoCE traffic (defaults in module_utils/plan.py)."""
    roce = plan_defaults.roce(plan)
    priority, dscp = int(roce["pfc_priority"]), int(roce["dscp"])
    if not (0 <= priority <= 7 and 0 <= dscp <= 63):
        raise AnsibleFilterError(f"gpulab_network.roce: pfc_priority {priority} (0-7) and dscp {dscp} (0-63)")
    if not isinstance(roce["ecn"], bool):
        raise AnsibleFilterError(f"gpulab_network.roce.ecn must be true or false, got {roce['ecn']!r}")
    return {"priority": priority, "dscp": dscp, "ecn": roce["ecn"], "tos": roce["traffic_class"]}


def roce_qos_commands(plan: dict[str, Any], netdev: str, tool: str = "dcb") -> list[str]:
    """Shell lines that make `netdev` lossless for RoCE; the RDMA device is looked up at run time."""
    if tool not in TOOLS:
        raise AnsibleFilterError(f"rdma_qos_tool must be one of {', '.join(TOOLS)}; got '{tool}'")
    qos = roce_qos(plan)
    prio, dscp, ecn = qos["priority"], qos["dscp"], qos["ecn"]
    if tool == "dcb":
        pfc = " ".join(f"{i}:{'on' if i == prio else 'off'}" for i in range(8))
        # mlx5 switches the port to DSCP trust when it gets its first DSCP APP entry.
        lines = [f"dcb pfc set dev {netdev} prio-pfc {pfc}", f"dcb app replace dev {netdev} dscp-prio {dscp}:{prio}"]
    elif tool == "none":
        lines = []
    else:
        pfc = ",".join("1" if i == prio else "0" for i in range(8))
        lines = [
            f"mlnx_qos -i {netdev} --trust dscp",
            f"mlnx_qos -i {netdev} --pfc {pfc}",
            f"mlnx_qos -i {netdev} --dscp2prio set,{dscp},{prio}",
        ]
    if ecn:  # mlx5 exposes ECN per priority: notification point (receiver) and reaction point (sender)
        lines += [
            f"for role in roce_np roce_rp; do f=/sys/class/net/{netdev}/ecn/$role/enable/{prio}; "
            '[ ! -e "$f" ] || echo 1 > "$f"; done'
        ]
    lines += [
        f'dev=$(rdma link show | awk \'$NF == "{netdev}" {{ split($2, p, "/"); print p[1] }}\')',
        f'[ -n "$dev" ] || {{ echo "no RDMA device on {netdev}" >&2; exit 1; }}',
        'cm=/sys/kernel/config/rdma_cm/$dev; mkdir -p "$cm"',
        f'echo {qos["tos"]} > "$cm/ports/1/default_roce_tos"',
        'echo "RoCE v2" > "$cm/ports/1/default_roce_mode"',
    ]
    return lines


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"roce_qos": roce_qos, "roce_qos_commands": roce_qos_commands}
