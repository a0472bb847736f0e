"""What the network plan (gpulab_network) leaves unsaid, written once for the filters and the modules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# RoCE: lossless PFC priority, the DSCP that maps to it, and the usual RoCE v2 IPv4 GID index.
ROCE_PFC_PRIORITY = 3
ROCE_DSCP = 26
ROCE_GID_INDEX = 3
# ECN on the RoCE priority; the packets then carry ECN-capable transport (ECT(0)) in the ToS byte.
ROCE_ECN = True
ECT0 = 2
# A 100 Gb/s link carries at most ~12 GB/s of bus bandwidth (line rate 12.5 GB/s).
LINK_EFFICIENCY = 0.96


def roce(plan: Mapping[str, Any]) -> dict[str, Any]:
    """The plan's roce section with the defaults filled in: {pfc_priority, dscp, gid_index, ecn,
    traffic_class}. traffic_class is the one ToS byte RoCE traffic carries - RDMA-CM's default,
    NCCL_IB_TC and the switch checklist all use it: DSCP << 2, with ECT(0) when ECN is on."""
    given = plan.get("roce") or {}
    dscp = given.get("dscp", ROCE_DSCP)
    ecn = given.get("ecn", ROCE_ECN)
    return {
        "pfc_priority": given.get("pfc_priority", ROCE_PFC_PRIORITY),
        "dscp": dscp,
        "gid_index": given.get("gid_index", ROCE_GID_INDEX),
        "ecn": ecn,
        "traffic_class": int(dscp) << 2 | (ECT0 if ecn is True else 0),
    }


def expected_busbw(link_speed_gbps: float) -> float:
    """The bus bandwidth (GB/s) one link of this speed sustains: line rate in bytes x protocol efficiency."""
    return link_speed_gbps / 8 * LINK_EFFICIENCY
