"""Ray's nodes (`ray list nodes --format json`) held to the cluster the ray role described on the head."""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import Check, failed, passed

NEXT = "on the node: systemctl status gpulab-ray-worker, journalctl -u gpulab-ray-worker"


class RayParseError(ValueError):
    """`ray list nodes` printed something other than a JSON list of nodes."""


def alive_nodes(text: str) -> dict[str, dict[str, float]]:
    """node address -> the CPUs and GPUs Ray's ALIVE nodes there offer ({"CPU": 2.0, "GPU": 1.0}), summed over
    the nodes at one address (a head that is also a worker's host); a restarted worker leaves its earlier node
    behind as DEAD, which does not count."""
    try:
        nodes = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RayParseError(f"ray list nodes: not JSON ({exc}): {text[:200]!r}") from exc
    if not isinstance(nodes, list):
        raise RayParseError(f"ray list nodes: expected a list of nodes, got {type(nodes).__name__}")
    alive: dict[str, dict[str, float]] = {}
    for node in nodes:
        if node.get("state") == "ALIVE":
            offered = alive.setdefault(node["node_ip"], {"CPU": 0.0, "GPU": 0.0})
            for resource in offered:
                offered[resource] += float((node.get("resources_total") or {}).get(resource, 0))
    return alive


def worker_records(alive: dict[str, dict[str, Any]], cluster: dict[str, Any]) -> list[Check]:
    """One record per declared worker (alive at its address, offering its CPUs and GPUs), then the count.
    cluster: the head's description ({workers: {host: {address, cpus, gpus}}})."""
    records = []
    for host, want in sorted(cluster["workers"].items()):
        name = f"ray.worker.{host}"
        got = alive.get(want["address"])
        if got is None:
            records.append(failed(name, f"no live Ray node at {want['address']} ({NEXT})", code="RAY_WORKER_MISSING"))
            continue
        cpus, gpus = int(got["CPU"]), int(got["GPU"])
        offers = f"{cpus} CPU, {gpus} GPU"
        if (cpus, gpus) != (want["cpus"], want["gpus"]):
            records.append(
                failed(
                    name,
                    f"offers Ray {offers}, the node has {want['cpus']} CPU and declares {want['gpus']} GPU "
                    "(rerun --tags ray; a GPU the driver hides is not offered)",
                    value=gpus,
                    threshold=want["gpus"],
                    code="RAY_RESOURCES",
                )
            )
        else:
            records.append(passed(name, f"alive at {want['address']}, offering {offers}", value=gpus, unit="GPU"))
    up = sum(r.status == "pass" or r.code == "RAY_RESOURCES" for r in records)
    declared = len(cluster["workers"])
    count = f"{up} of {declared} workers alive, head {cluster['head']} at {cluster['address']}"
    records.append(
        (passed if up == declared else failed)(
            "ray.workers", count, value=up, threshold=declared, code=None if up == declared else "RAY_WORKER_MISSING"
        )
    )
    return records
