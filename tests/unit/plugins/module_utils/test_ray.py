"""Ray's nodes, as `ray list nodes --format json` printed them in the lab (head mgmt1, workers gpu1 and gpu2,
gpu2's worker stopped and started once: its first node stays listed as DEAD), held to the cluster the head
describes."""

import json
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils.ray import RayParseError, alive_nodes, worker_records

LISTED = (Path(__file__).resolve().parents[2] / "fixtures" / "ray" / "list-nodes.json").read_text()
CLUSTER = {
    "head": "mgmt1",
    "address": "172.30.10.11",
    "workers": {
        "gpu1": {"address": "172.30.10.13", "cpus": 2, "gpus": 1},
        "gpu2": {"address": "172.30.10.14", "cpus": 2, "gpus": 1},
    },
}


def records(listed=LISTED, cluster=None):
    return [(r.check, r.status, r.code, r.message) for r in worker_records(alive_nodes(listed), cluster or CLUSTER)]


def test_the_live_nodes_by_address_leave_the_restarted_worker_s_dead_node_out():
    assert len(json.loads(LISTED)) == 4
    assert alive_nodes(LISTED) == {
        "172.30.10.11": {"CPU": 0.0, "GPU": 0.0},
        "172.30.10.13": {"CPU": 2.0, "GPU": 1.0},
        "172.30.10.14": {"CPU": 2.0, "GPU": 1.0},
    }


def test_every_declared_worker_alive_with_what_it_declares_passes():
    assert records() == [
        ("ray.worker.gpu1", "pass", None, "alive at 172.30.10.13, offering 2 CPU, 1 GPU"),
        ("ray.worker.gpu2", "pass", None, "alive at 172.30.10.14, offering 2 CPU, 1 GPU"),
        ("ray.workers", "pass", None, "2 of 2 workers alive, head mgmt1 at 172.30.10.11"),
    ]


def test_a_worker_with_no_live_node_fails_and_so_does_the_count():
    nodes = json.loads(LISTED)
    for node in nodes:
        if node["node_ip"] == "172.30.10.14":
            node["state"] = "DEAD"
    assert records(json.dumps(nodes))[1:] == [
        (
            "ray.worker.gpu2",
            "fail",
            "RAY_WORKER_MISSING",
            "no live Ray node at 172.30.10.14 (on the node: systemctl status gpulab-ray-worker, "
            "journalctl -u gpulab-ray-worker)",
        ),
        ("ray.workers", "fail", "RAY_WORKER_MISSING", "1 of 2 workers alive, head mgmt1 at 172.30.10.11"),
    ]


def test_a_worker_offering_fewer_gpus_than_it_declares_fails_but_counts_as_alive():
    declared = json.loads(json.dumps(CLUSTER))
    declared["workers"]["gpu1"]["gpus"] = 2
    assert records(cluster=declared)[0] == (
        "ray.worker.gpu1",
        "fail",
        "RAY_RESOURCES",
        "offers Ray 2 CPU, 1 GPU, the node has 2 CPU and declares 2 GPU (rerun --tags ray; a GPU the driver "
        "hides is not offered)",
    )
    assert records(cluster=declared)[2][:3] == ("ray.workers", "pass", None)


def test_output_that_is_not_a_list_of_nodes_is_an_error():
    with pytest.raises(RayParseError, match="not JSON"):
        alive_nodes("Failed to connect to API server")
    with pytest.raises(RayParseError, match="expected a list of nodes, got dict"):
        alive_nodes("{}")
