"""Ceph's health and OSD map as check records (`ceph health detail -f json`, `ceph osd stat -f json`), and the
cluster as the ceph role reads it (`ceph status -f json`, `ceph fs ls -f json`). Pure."""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import Check, failed, passed, warned


class CephParseError(ValueError):
    """Output that is not the JSON `ceph ... -f json` prints."""


def _json(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CephParseError(f"{what} is not JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise CephParseError(f"{what} is not a JSON object")
    return data


def health(text: str) -> Check:
    """`ceph health detail -f json` -> ceph.health: HEALTH_OK passes, HEALTH_WARN warns, HEALTH_ERR fails, each
    naming Ceph's own checks (OSD_DOWN: 1 osds down; ...)."""
    data = _json(text, "ceph health detail")
    status = data.get("status")
    checks = data.get("checks") or {}
    said = "; ".join(f"{name}: {(c.get('summary') or {}).get('message', '')}" for name, c in sorted(checks.items()))
    if status == "HEALTH_OK":
        return passed("ceph.health", "HEALTH_OK")
    if status == "HEALTH_WARN":
        return warned("ceph.health", f"HEALTH_WARN: {said} (ceph health detail)", code="CEPH_HEALTH_WARN")
    if status == "HEALTH_ERR":
        return failed("ceph.health", f"HEALTH_ERR: {said} (ceph health detail)", code="CEPH_HEALTH_ERR")
    raise CephParseError(f"ceph health detail gave no known status: {status!r}")


def osds(text: str, expected: int | None = None) -> Check:
    """`ceph osd stat -f json` -> ceph.osds: every OSD up and in, and at least `expected` of them (the devices
    the inventory gives Ceph), else fail naming how many are not."""
    data = _json(text, "ceph osd stat")
    try:
        total, up, inside = (int(data[k]) for k in ("num_osds", "num_up_osds", "num_in_osds"))
    except (KeyError, TypeError, ValueError):
        raise CephParseError("ceph osd stat lacks num_osds, num_up_osds or num_in_osds") from None
    if expected is not None and total < expected:
        return failed(
            "ceph.osds",
            f"{total} OSDs in the cluster, {expected} devices declared (ceph_osd_devices): the ceph role did not "
            "make the others (its log; ceph-volume raw list on the storage nodes)",
            value=total,
            threshold=expected,
            unit="OSDs",
            code="CEPH_OSD_MISSING",
        )
    if up < total or inside < total:
        return failed(
            "ceph.osds",
            f"{up} of {total} OSDs up, {inside} in: data has fewer copies until they are back "
            "(ceph osd tree; systemctl status ceph-osd@N on the storage node)",
            value=up,
            threshold=total,
            unit="OSDs",
            code="CEPH_OSD_DOWN",
        )
    return passed("ceph.osds", f"all {total} OSDs up and in", value=up, threshold=total, unit="OSDs")


def cluster(status_text: str, fs_text: str) -> dict[str, Any]:
    """`ceph status -f json` and `ceph fs ls -f json` -> what the ceph role acts on: the monitors in quorum,
    the health status with each check's message, the managers' enabled modules and the file systems' names."""
    data = _json(status_text, "ceph status")
    try:
        listed = json.loads(fs_text)
    except json.JSONDecodeError as exc:
        raise CephParseError(f"ceph fs ls is not JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(listed, list) or not all(isinstance(fs, dict) and "name" in fs for fs in listed):
        raise CephParseError("ceph fs ls is not a list of file systems with names")
    health = data.get("health") or {}
    if "quorum_names" not in data or "status" not in health:
        raise CephParseError("ceph status lacks quorum_names or health.status")
    checks = health.get("checks") or {}
    return {
        "quorum": sorted(data["quorum_names"]),
        "health": health["status"],
        "checks": {name: (check.get("summary") or {}).get("message", "") for name, check in sorted(checks.items())},
        "mgr_modules": sorted((data.get("mgrmap") or {}).get("modules") or []),
        "fs": sorted(fs["name"] for fs in listed),
    }
