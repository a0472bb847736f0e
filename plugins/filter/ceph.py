"""The ceph role's settings checked before anything is installed: every problem at once, each naming its variable."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.gpulab.cluster.plugins.filter.host_facts import missing

FSID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def ceph_problems(
    osd_devices: list[str],
    *,
    mon_hosts: list[str],
    mds_hosts: list[str],
    fsid: str,
    pool_size: int,
    pool_min_size: int,
    traffic_class: str,
    networks: Mapping[str, Any],
    allow_overwrite: list[str],
    luks_devices: list[Mapping[str, Any]],
) -> list[str]:
    """What the argument spec cannot check of the ceph_* settings; osd_devices: this host's ceph_osd_devices,
    luks_devices: this host's luks_devices (a disk it encrypts cannot hold an OSD)."""
    problems = []
    not_mons = missing(mds_hosts, mon_hosts)
    if not_mons:
        problems.append(f"ceph_mds_hosts must be monitor hosts (not: {', '.join(not_mons)})")
    if not FSID.match(fsid):
        problems.append(f"ceph_fsid must be a lower-case UUID (got '{fsid}')")
    if pool_min_size > pool_size:
        problems.append(f"ceph_pool_min_size ({pool_min_size}) must not exceed ceph_pool_size ({pool_size})")
    if traffic_class not in networks:
        problems.append(
            f"ceph_traffic_class '{traffic_class}' must be one of gpulab_network.networks ({', '.join(networks)})"
        )
    foreign = missing(allow_overwrite, osd_devices)
    if foreign:
        problems.append(f"ceph_allow_overwrite may name only devices in ceph_osd_devices (not: {', '.join(foreign)})")
    luks = [d["device"] for d in luks_devices] + [f"/dev/mapper/{d['name']}" for d in luks_devices]
    encrypted = [device for device in dict.fromkeys(osd_devices) if device in luks]
    if encrypted:
        problems.append(
            f"ceph_osd_devices names disks that luks_devices encrypts ({', '.join(encrypted)}): OSDs on LUKS are not"
            " supported, as their activation at boot is not ordered after the disk is opened; give Ceph unencrypted"
            " disks of its own"
        )
    return problems


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ceph_problems": ceph_problems}
