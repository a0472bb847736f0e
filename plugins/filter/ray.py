"""The ray role's settings and nodes, checked before a Ray service is written or started: each problem names
its variable or both sides of a difference."""

from __future__ import annotations

import json
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.filter.network_plan import node_addresses
from ansible_collections.gpulab.cluster.plugins.module_utils.ray import RayParseError, alive_nodes

# Ray's smallest object store (ray_constants.OBJECT_STORE_MINIMUM_MEMORY_BYTES): below it Ray will not start.
OBJECT_STORE_MINIMUM = 75 * 1024 * 1024
# The share of /dev/shm the object store may take: the rest stays for DataLoader workers and NCCL.
SHM_SHARE = 0.9


def ray_head(configured: str, groups: dict[str, list[str]]) -> str:
    """The Ray head: ray_head_host where set, else the first management node, else the first compute node."""
    if configured:
        return configured
    for group in ("management", "compute"):
        if groups.get(group):
            return groups[group][0]
    return ""


def ray_problems(inventory: list[str], *, head: str, workers: list[str], fraction: Any) -> list[str]:
    """What the argument spec cannot check of the ray_* settings; inventory: every host (groups['all'])."""
    problems = []
    if not head:
        problems.append("ray_head_host is empty and the inventory has no management or compute node to default to")
    elif head not in inventory:
        problems.append(f"ray_head_host {json.dumps(head)} is not in the inventory")
    unknown = [w for w in workers if w not in inventory]
    if unknown:
        problems.append(f"ray_worker_hosts names hosts that are not in the inventory: {', '.join(unknown)}")
    if not workers:
        problems.append("ray_worker_hosts is empty: a Ray cluster needs at least one worker")
    try:
        if not 0 < float(fraction) <= 0.8:
            problems.append(f"ray_object_store_fraction must be above 0 and at most 0.8, got {fraction}")
    except (TypeError, ValueError):
        problems.append(f"ray_object_store_fraction must be a number, got {json.dumps(fraction)}")
    return problems


def ray_object_store(node: dict[str, Any], fraction: float) -> int:
    """Bytes for a node's object store: `fraction` of its memory, at most SHM_SHARE of its /dev/shm (beyond
    that Ray would spill the store to disk). node: what the role read ({memory, shm} in bytes)."""
    return int(min(float(fraction) * node["memory"], SHM_SHARE * node["shm"]))


def _mib(size: float) -> str:
    return f"{size / 2**20:.0f} MiB"


def ray_node_problems(
    node: dict[str, Any],
    *,
    host: str,
    head: str,
    head_node: dict[str, Any],
    version: str,
    env_dir: str,
    fraction: float,
) -> list[str]:
    """A Ray node's problems. node and head_node: what the role read on the node and on the head ({ray, python,
    memory, shm}, or {error}); version: ray_version."""
    if "error" in node:
        return [f"{host}: the training environment {env_dir} (training_env_dir) cannot run Python: {node['error']}"]
    if not node.get("ray"):
        return [f"{host}: the training environment {env_dir} has no Ray; add ray to training_frameworks"]
    problems = []
    if host != head and "ray" not in head_node:
        problems.append(f"{host}: the head {head} was not read (put it in the play, or in --limit)")
    if node["ray"] != version:
        problems.append(
            f"ray_version is {version} but the training environment on {host} holds Ray {node['ray']} "
            "(training_versions.ray): give both one pin, gpulab_versions.ray"
        )
    elif (
        host != head and "ray" in head_node and (node["ray"], node["python"]) != (head_node["ray"], head_node["python"])
    ):
        problems.append(
            f"{host} has Ray {node['ray']} on Python {node['python']} but the head {head} has Ray "
            f"{head_node['ray']} on Python {head_node['python']}: a worker must run the head's versions"
        )
    store = ray_object_store(node, fraction)
    if store < OBJECT_STORE_MINIMUM:
        share = _mib(fraction * node["memory"])
        problems.append(
            f"{host}: /dev/shm holds {_mib(node['shm'])}, too small for Ray's object store ({_mib(store)} of the "
            f"{_mib(OBJECT_STORE_MINIMUM)} Ray needs; ray_object_store_fraction gives {share}): "
            "enlarge /dev/shm (its tmpfs size=, or a container's --shm-size)"
        )
    return problems


def ray_node(read: dict[str, Any]) -> dict[str, Any]:
    """The role's read of a node (a command result whose stdout is {ray, python, memory, shm, cpus, gpus}) as a
    dict, or {error} where the environment's Python did not run."""
    if read.get("rc") != 0 or not read.get("stdout"):
        said = (read.get("stderr") or read.get("msg") or read.get("stdout") or "").strip()
        return {"error": said.splitlines()[-1][:200] if said else f"exit {read.get('rc')}"}
    return json.loads(read["stdout"])


def ray_cluster(
    hostvars: dict[str, Any], *, head: str, workers: list[str], plan: dict[str, Any], traffic_class: str
) -> dict[str, Any]:
    """The cluster the head expects, written on the head for validation: its address and each worker's address,
    CPUs and GPUs (as the role read them on each worker)."""
    addresses = node_addresses(hostvars, [head, *workers], plan, traffic_class)
    expected = {}
    for worker in workers:
        node = ray_node(hostvars[worker].get("__ray_read") or {})
        if "cpus" not in node:
            raise AnsibleFilterError(f"ray: {worker} was not read (is it in the play?)")
        expected[worker] = {"address": addresses[worker], "cpus": node["cpus"], "gpus": node["gpus"]}
    return {"head": head, "address": addresses[head], "workers": expected}


def ray_alive(listed: dict[str, Any]) -> list[str]:
    """The addresses of the nodes Ray holds ALIVE, from a `ray list nodes --format json` command result; none
    while the head does not answer (a failed command, or output that is not the list yet)."""
    if listed.get("rc") != 0:
        return []
    try:
        return sorted(alive_nodes(listed.get("stdout", "")))
    except RayParseError:
        return []


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "ray_head": ray_head,
            "ray_problems": ray_problems,
            "ray_object_store": ray_object_store,
            "ray_node": ray_node,
            "ray_node_problems": ray_node_problems,
            "ray_cluster": ray_cluster,
            "ray_alive": ray_alive,
        }
