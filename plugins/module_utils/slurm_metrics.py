"""Slurm's state as Prometheus metrics (nodes by state, drained nodes with their reason, the queue),
from `scontrol -o show node` and `squeue -h -o %T`. Pure functions; the Slurm collector runs
the commands."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.prom_text import family
from ansible_collections.gpulab.cluster.plugins.module_utils.slurm import SlurmParseError, parse_node_line

DRAIN_FLAGS = {"DRAIN", "DRAINED", "DRAINING"}
# Slurm's state suffixes: * not responding, ~ powered off, # powering up, % powering down, ...
STATE_SUFFIXES = "*~#!%$@^-"


def parse_nodes(text: str) -> list[dict[str, Any]]:
    """`scontrol -o show node` -> [{name, state (base, lower case), drain, not_responding, reason}]."""
    nodes = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith("NodeName="):
            raise SlurmParseError(f"not a node line of scontrol -o show node: {line[:200]!r}")
        name = line.split(" ", 1)[0].split("=", 1)[1]
        state, reason = parse_node_line(line)
        flags = state.rstrip(STATE_SUFFIXES).split("+")
        nodes.append(
            {
                "name": name,
                "state": flags[0].lower(),
                "drain": bool(DRAIN_FLAGS & set(flags)),
                "not_responding": state.endswith("*") or "NOT_RESPONDING" in flags,
                "reason": reason,
            }
        )
    return nodes


def parse_queue(text: str) -> Counter:
    """`squeue -h -o %T` -> Counter of job states, lower case; pending and running always there."""
    jobs: Counter = Counter({"pending": 0, "running": 0})
    jobs.update(line.strip().lower() for line in text.splitlines() if line.strip())
    return jobs


def render(nodes: list[dict[str, Any]] | None, jobs: Counter | None = None, error: str | None = None) -> str:
    """The textfile for one collection. nodes None means Slurm could not be asked (error says why):
    then only gpulab_slurm_up 0 and the reason."""
    up = nodes is not None
    lines = family("gpulab_slurm_up", "gauge", "1 when slurmctld answered.", [({}, 1 if up else 0)])
    if not up:
        lines += family(
            "gpulab_slurm_error", "gauge", "Why Slurm could not be asked.", [({"reason": error or "unknown"}, 1)]
        )
        return "\n".join(lines) + "\n"
    by_state = Counter(node["state"] for node in nodes)
    lines += family(
        "gpulab_slurm_nodes", "gauge", "Nodes by base state.", [({"state": s}, n) for s, n in sorted(by_state.items())]
    )
    lines += family(
        "gpulab_slurm_node_drain",
        "gauge",
        "1 while the node is drained or draining, with the reason given.",
        [({"node": n["name"], "reason": n["reason"] if n["drain"] else ""}, 1 if n["drain"] else 0) for n in nodes],
    )
    lines += family(
        "gpulab_slurm_node_not_responding",
        "gauge",
        "1 while slurmctld cannot reach the node's slurmd.",
        [({"node": n["name"]}, 1 if n["not_responding"] else 0) for n in nodes],
    )
    queue = [({"state": state}, n) for state, n in sorted((jobs or parse_queue("")).items())]
    lines += family("gpulab_slurm_jobs", "gauge", "Jobs in the queue by state.", queue)
    return "\n".join(lines) + "\n"
