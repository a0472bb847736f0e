#!/usr/bin/python
"""Check RDMA ports, the RoCE v2 GID and PFC/DSCP settings, and return gpulab check records."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_health
short_description: Check RDMA port state, link layer, MTU, the RoCE v2 GID and PFC/DSCP settings
description:
  - Reads every RDMA device and port from sysfs (state, physical state, link layer, rate, GID table) and the
    active MTU from C(ibv_devinfo).
  - For I(fabric=roce), finds the RoCE v2 GID that carries the interface's IPv4 address (the index
    C(NCCL_IB_GID_INDEX) needs) and checks that PFC is on for the RoCE priority and that the RoCE DSCP maps
    to it, with C(mlnx_qos) when the NVIDIA tools are installed, else C(dcb) from iproute2.
  - No RDMA device, or a NIC without DCB support, is reported as C(unavailable), not as a fault.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  fabric:
    description:
      - What the plan declares the fabric is; C(roce) expects Ethernet ports, C(infiniband) InfiniBand ports.
      - Declared, a node without an RDMA device fails. Left out, such a node is C(unavailable) (nothing to
        check) and ports are judged as RoCE.
    type: str
    choices: [roce, infiniband]
  device:
    description: Only this RDMA device (C(mlx5_0), C(rxe0)); all devices when unset.
    type: str
  netdev:
    description:
      - The interface that carries RoCE's IPv4 address, such as a VLAN interface (C(enp65s0f0np0.20)) or the
        NIC itself; the RoCE v2 GID on it is reported. Any interface's when unset.
      - PFC and DSCP are read from the NIC the RDMA port is bound to, not from a VLAN above it.
    type: str
  min_active_mtu:
    description:
      - Smallest acceptable active MTU in bytes (4096 on a jumbo-frame fabric).
      - Soft-RoCE on an MTU-1500 NIC gets 1024.
    type: int
    default: 4096
  min_rate_gbps:
    description: Smallest acceptable port rate in Gbit/s; not judged when unset.
    type: float
  check_qos:
    description: Check PFC and DSCP (RoCE only).
    type: bool
    default: true
  pfc_priority:
    description: The priority that carries RoCE and must have PFC.
    type: int
    default: 3
  roce_dscp:
    description: The DSCP RoCE traffic is marked with (26 is the common choice).
    type: int
    default: 26
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: RoCE ports, GID and PFC on the fabric NIC
  gpulab.cluster.rdma_health:
    fabric: roce
    netdev: enp65s0f0np0
    min_rate_gbps: 100
  register: rdma

- name: Soft-RoCE in a test bed (MTU 1500, no DCB)
  gpulab.cluster.rdma_health:
    device: rxe0
    min_active_mtu: 1024
    check_qos: false
"""

RETURN = r"""
checks:
  description: Records per port (C(port_state.DEV/N), C(link_layer.DEV/N), C(active_mtu.DEV/N), C(rate.DEV/N)),
    then C(roce_v2_gid), C(pfc), C(dscp) for RoCE.
  returned: always
  type: list
  elements: dict
status:
  description: Worst status among the checks.
  returned: always
  type: str
ports:
  description: Every port read - device, port, state, phys_state, link_layer, rate_gbps, active_mtu, netdev.
  returned: always
  type: list
  elements: dict
gid_index:
  description: The RoCE v2 GID index for NCCL_IB_GID_INDEX; null when none was found or the fabric is InfiniBand.
  returned: always
  type: int
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import plan, rdma
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import POSITIVE, between, start
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import exit_with_records, failed, unavailable

SYS_INFINIBAND = "/sys/class/infiniband"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):  # unpopulated GID attributes fail with EINVAL
        return None


def _gids(port_dir: str) -> list[dict]:
    found = []
    gid_dir = os.path.join(port_dir, "gids")
    for index in sorted(os.listdir(gid_dir), key=int) if os.path.isdir(gid_dir) else []:
        gid = _read(os.path.join(gid_dir, index))
        if gid and gid != rdma.ZERO_GID:
            found.append(
                {
                    "index": int(index),
                    "gid": gid,
                    "type": _read(os.path.join(port_dir, "gid_attrs", "types", index)),
                    "ndev": _read(os.path.join(port_dir, "gid_attrs", "ndevs", index)),
                }
            )
    return found


def read_ports(device: str | None) -> list[dict]:
    ports = []
    for dev in sorted(os.listdir(SYS_INFINIBAND)):
        if device and dev != device:
            continue
        ports_dir = os.path.join(SYS_INFINIBAND, dev, "ports")
        for port in sorted(os.listdir(ports_dir), key=int) if os.path.isdir(ports_dir) else []:
            port_dir = os.path.join(ports_dir, port)
            gids = _gids(port_dir)
            ports.append(
                {
                    "device": dev,
                    "port": int(port),
                    "state": rdma.sysfs_state(_read(os.path.join(port_dir, "state")) or ""),
                    "phys_state": rdma.sysfs_state(_read(os.path.join(port_dir, "phys_state")) or ""),
                    "link_layer": _read(os.path.join(port_dir, "link_layer")),
                    "rate_gbps": rdma.parse_rate(_read(os.path.join(port_dir, "rate")) or ""),
                    "netdev": next((g["ndev"] for g in gids if g["ndev"]), None),
                    "gids": gids,
                }
            )
    return ports


def _active_mtus(module: AnsibleModule) -> dict:
    binary = module.get_bin_path("ibv_devinfo")
    if not binary:
        return {}
    rc, out, _err = module.run_command([binary])
    try:
        return rdma.parse_ibv_devinfo(out) if rc == 0 else {}
    except rdma.RdmaParseError:
        return {}


def _qos(module: AnsibleModule, netdev: str) -> tuple[list | None, dict | None, str | None, str]:
    """(pfc priorities, dscp -> prio, trust, source); pfc None when the settings could not be read."""
    mlnx_qos = module.get_bin_path("mlnx_qos")
    if mlnx_qos:
        rc, out, err = module.run_command([mlnx_qos, "-i", netdev])
        if rc == 0:
            try:
                found = rdma.parse_mlnx_qos(out)
                return found["pfc"], found["dscp_prio"], found["trust"], "mlnx_qos"
            except rdma.RdmaParseError as exc:
                return None, None, None, f"mlnx_qos: {exc}"
    dcb = module.get_bin_path("dcb")
    if not dcb:
        return None, None, None, "neither mlnx_qos nor dcb (iproute2) is installed"
    rc, out, err = module.run_command([dcb, "-j", "pfc", "show", "dev", netdev])
    if rc != 0:
        return None, None, None, f"dcb pfc on {netdev} failed ({err.strip() or rc}): the NIC has no DCB support?"
    rc_app, out_app, _err = module.run_command([dcb, "-j", "app", "show", "dev", netdev, "dscp-prio"])
    try:
        pfc = rdma.parse_dcb_pfc(out)
        mapping = rdma.parse_dcb_app(out_app) if rc_app == 0 else {}
    except rdma.RdmaParseError as exc:
        return None, None, None, f"dcb: {exc}"
    return pfc, mapping, None, "dcb"


ARGUMENT_SPEC = dict(
    fabric=dict(type="str", choices=["roce", "infiniband"]),
    device=dict(type="str"),
    netdev=dict(type="str"),
    min_active_mtu=dict(type="int", default=4096),
    min_rate_gbps=dict(type="float"),
    check_qos=dict(type="bool", default=True),
    pfc_priority=dict(type="int", default=plan.ROCE_PFC_PRIORITY),
    roce_dscp=dict(type="int", default=plan.ROCE_DSCP),
)
BOUNDS = {"pfc_priority": between(0, 7), "roce_dscp": between(0, 63), "min_rate_gbps": POSITIVE}
IB_MTUS = (256, 512, 1024, 2048, 4096)


def input_problem(p: dict) -> str | None:
    """The first setting BOUNDS cannot say that cannot be used, as a message naming it; None when all can."""
    if p["min_active_mtu"] not in IB_MTUS:
        return f"min_active_mtu must be an IB MTU (256 to 4096, a power of 2), got {p['min_active_mtu']}"
    return None


def main() -> None:
    module = start(ARGUMENT_SPEC, input_problem, BOUNDS)
    p = module.params

    ports = read_ports(p["device"]) if os.path.isdir(SYS_INFINIBAND) else []
    if not ports:
        what = f"RDMA device {p['device']}" if p["device"] else "RDMA device"
        found = (
            f"no {what} on {os.uname().nodename} ({SYS_INFINIBAND} is empty or missing): load the NIC's RDMA "
            "driver (mlx5_ib) or set up Soft-RoCE"
        )
        # A fabric the plan declares must be there; without a declaration there is only nothing to check.
        record = (
            failed("rdma_devices", f"the plan's fabric is {p['fabric']}, but {found}", code="RDMA_NO_DEVICE")
            if p["fabric"]
            else unavailable("rdma_devices", found, code="RDMA_NO_DEVICE")
        )
        exit_with_records(module, [record], ports=[], gid_index=None)

    mtus = _active_mtus(module)
    link_layer = "InfiniBand" if p["fabric"] == "infiniband" else "Ethernet"
    records = []
    for port in ports:
        port["active_mtu"] = mtus.get(port["device"], {}).get(port["port"], {}).get("active_mtu")
        records += rdma.evaluate_port(
            port["device"], port["port"], port, link_layer, p["min_active_mtu"], p["min_rate_gbps"]
        )

    gid_index = None
    if p["fabric"] != "infiniband":
        gid = rdma.roce_v2_gid([g for port in ports for g in port["gids"]], p["netdev"])
        records.append(rdma.evaluate_gid(gid, p["netdev"]))
        gid_index = gid["index"] if gid else None
        if p["check_qos"]:
            nic = next((port["netdev"] for port in ports if port["netdev"]), None)
            if nic is None:
                records.append(unavailable("pfc", "no netdev is bound to the RDMA port"))
            else:
                pfc, dscp_prio, trust, source = _qos(module, nic)
                records += rdma.evaluate_qos(pfc, dscp_prio, trust, p["pfc_priority"], p["roce_dscp"], source)

    exit_with_records(module, records, ports=ports, gid_index=gid_index)


if __name__ == "__main__":
    main()
