"""What a block device holds, and whether a role may write a new format onto it.

Pure functions over `wipefs --json` output: wipefs lists every signature it knows (file
systems, partition tables, LUKS headers, Ceph BlueStore, RAID members) without changing the
device, and works in containers where `lsblk -f` has no udev database to read.
"""

from __future__ import annotations

import json
from typing import Any

PARTITION_TABLES = {"gpt", "dos", "PMBR"}


class StorageParseError(ValueError):
    """wipefs output that is not the JSON it should be."""


def parse_wipefs_json(text: str) -> list[dict[str, Any]]:
    """`wipefs --json DEV` -> [{type, offset, uuid, label}], one per signature (empty output: none)."""
    if not text.strip():
        return []
    try:
        data = json.loads(text)
        signatures = data["signatures"]
    except (ValueError, KeyError, TypeError) as exc:
        raise StorageParseError(f"not wipefs --json output: {exc}") from exc
    return [
        {"type": s.get("type"), "offset": s.get("offset"), "uuid": s.get("uuid"), "label": s.get("label")}
        for s in signatures
    ]


def parse_bluestore_label(text: str) -> dict[str, Any]:
    """`ceph-bluestore-tool show-label --dev DEV` -> {ceph_fsid, osd_id, osd_uuid}.

    The label also holds the OSD's secret key (osd_key): it is left out here, so no result
    built from this carries it.
    """
    try:
        (label,) = json.loads(text).values()
        return {"ceph_fsid": label["ceph_fsid"], "osd_id": int(label["whoami"]), "osd_uuid": label["osd_uuid"]}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StorageParseError(f"not ceph-bluestore-tool show-label output for one device: {exc!r}") from exc


def classify(signatures: list[dict[str, Any]], expect: list[str], label: str | None = None) -> str:
    """'empty' (nothing on it), 'expected' (only what the role itself writes), else 'foreign'.

    With `label`, a signature is the role's own only when it carries that label too: an ext4
    someone else made is not scratch the role may mount, a LUKS header not one it may manage.
    """
    if not signatures:
        return "empty"
    if all(s["type"] in expect and (label is None or s.get("label") == label) for s in signatures):
        return "expected"
    return "foreign"


def describe(signatures: list[dict[str, Any]]) -> str:
    """'ext4 (UUID 932e0b66-..., label data)', 'a gpt partition table': what an operator recognises."""
    parts: list[str] = []
    for kind in dict.fromkeys(s["type"] for s in signatures):  # each type once, in order found
        first = next(s for s in signatures if s["type"] == kind)
        if kind in PARTITION_TABLES:
            text = "a protective MBR" if kind == "PMBR" else f"a {kind} partition table"
        elif first.get("osd_id") is not None:
            text = f"{kind} (OSD {first['osd_id']} of Ceph cluster {first['ceph_fsid']})"
        else:
            details = [f"UUID {first['uuid']}"] if first.get("uuid") else []
            details += [f"label {first['label']}"] if first.get("label") else []
            text = f"{kind} ({', '.join(details)})" if details else str(kind)
        parts.append(text)
    return ", ".join(parts)


def refusal(device: str, signatures: list[dict[str, Any]], allow_variable: str) -> str:
    """The message for a device that holds something else."""
    return (
        f"refusing to write to {device}: it holds {describe(signatures)}. Nothing was changed. "
        f"If its data may be destroyed, add {device} to {allow_variable}."
    )
