"""The ray role's checks: its settings, what each node offers Ray, and the cluster the head describes."""

import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.filter.ray import (
    ray_alive,
    ray_cluster,
    ray_head,
    ray_node,
    ray_node_problems,
    ray_object_store,
    ray_problems,
)

GIB = 2**30
NODE = {"ray": "2.60.0", "python": "3.11.2", "memory": 64 * GIB, "shm": 32 * GIB, "cpus": 32, "gpus": 4}
HEAD = {**NODE, "cpus": 4, "gpus": 0}
CHECK = {"host": "gpu1", "head": "mgmt1", "head_node": HEAD, "version": "2.60.0", "env_dir": "/opt/gpulab/train"}


def test_the_head_is_the_named_host_else_the_first_management_else_the_first_compute_node():
    groups = {"management": ["mgmt1", "mgmt2"], "compute": ["gpu1"]}
    assert ray_head("gpu1", groups) == "gpu1"
    assert ray_head("", groups) == "mgmt1"
    assert ray_head("", {"management": [], "compute": ["gpu1"]}) == "gpu1"
    assert ray_head("", {"storage": ["s1"]}) == ""


def test_good_settings_have_no_problem():
    assert ray_problems(["mgmt1", "gpu1", "gpu2"], head="mgmt1", workers=["gpu1", "gpu2"], fraction=0.3) == []


def test_every_settings_problem_at_once_each_naming_its_variable():
    assert ray_problems(["mgmt1", "gpu1"], head="mgmt9", workers=["gpu1", "gpu7"], fraction=0.95) == [
        'ray_head_host "mgmt9" is not in the inventory',
        "ray_worker_hosts names hosts that are not in the inventory: gpu7",
        "ray_object_store_fraction must be above 0 and at most 0.8, got 0.95",
    ]
    assert ray_problems(["s1"], head="", workers=[], fraction="lots") == [
        "ray_head_host is empty and the inventory has no management or compute node to default to",
        "ray_worker_hosts is empty: a Ray cluster needs at least one worker",
        'ray_object_store_fraction must be a number, got "lots"',
    ]


def test_the_object_store_is_a_share_of_memory_capped_below_dev_shm():
    assert ray_object_store(NODE, 0.3) == int(0.3 * 64 * GIB)
    # A container: 24 GiB of memory, /dev/shm of 1 GiB.
    assert ray_object_store({"memory": 24 * GIB, "shm": GIB}, 0.3) == int(0.9 * GIB)


def test_a_node_that_matches_its_head_and_the_pin_has_no_problem():
    assert ray_node_problems(NODE, fraction=0.3, **CHECK) == []
    assert ray_node_problems(HEAD, fraction=0.3, **{**CHECK, "host": "mgmt1"}) == []


def test_a_ray_other_than_ray_version_is_refused_naming_the_variable_and_the_pin():
    assert ray_node_problems(NODE, fraction=0.3, **{**CHECK, "version": "2.59.0"}) == [
        "ray_version is 2.59.0 but the training environment on gpu1 holds Ray 2.60.0 (training_versions.ray): "
        "give both one pin, gpulab_versions.ray"
    ]


def test_a_worker_on_another_python_than_its_head_is_refused_naming_both():
    assert ray_node_problems({**NODE, "python": "3.12.3"}, fraction=0.3, **CHECK) == [
        "gpu1 has Ray 2.60.0 on Python 3.12.3 but the head mgmt1 has Ray 2.60.0 on Python 3.11.2: "
        "a worker must run the head's versions"
    ]


def test_a_worker_whose_head_was_not_read_is_refused():
    assert ray_node_problems(NODE, fraction=0.3, **{**CHECK, "head_node": {"error": "exit None"}}) == [
        "gpu1: the head mgmt1 was not read (put it in the play, or in --limit)"
    ]


def test_docker_s_default_dev_shm_is_too_small_for_the_object_store():
    assert ray_node_problems({**NODE, "shm": 64 * 2**20}, fraction=0.3, **CHECK) == [
        "gpu1: /dev/shm holds 64 MiB, too small for Ray's object store (58 MiB of the 75 MiB Ray needs; "
        "ray_object_store_fraction gives 19661 MiB): enlarge /dev/shm (its tmpfs size=, or a container's --shm-size)"
    ]


def test_an_environment_without_ray_or_without_python_is_named():
    assert ray_node_problems({**NODE, "ray": None}, fraction=0.3, **CHECK) == [
        "gpu1: the training environment /opt/gpulab/train has no Ray; add ray to training_frameworks"
    ]
    missing = ray_node(
        {"rc": 2, "stdout": "", "stderr": "[Errno 2] No such file or directory: b'/opt/gpulab/train/bin/python'"}
    )
    assert ray_node_problems(missing, fraction=0.3, **CHECK) == [
        "gpu1: the training environment /opt/gpulab/train (training_env_dir) cannot run Python: "
        "[Errno 2] No such file or directory: b'/opt/gpulab/train/bin/python'"
    ]


def test_a_read_is_parsed_from_its_command_result():
    assert ray_node({"rc": 0, "stdout": json.dumps(NODE)}) == NODE
    assert ray_node({}) == {"error": "exit None"}


PLAN = {
    "networks": {"management": {"subnet": "172.30.10.0/24"}, "compute": {"subnet": "172.30.20.0/24"}},
    "address_offset": 10,
}


def test_the_head_describes_each_worker_s_address_cpus_and_gpus():
    hostvars = {
        "mgmt1": {"gpulab_node_index": 1, "__ray_read": {"rc": 0, "stdout": json.dumps(HEAD)}},
        "gpu1": {"gpulab_node_index": 3, "__ray_read": {"rc": 0, "stdout": json.dumps(NODE)}},
    }
    assert ray_cluster(hostvars, head="mgmt1", workers=["gpu1"], plan=PLAN, traffic_class="compute") == {
        "head": "mgmt1",
        "address": "172.30.20.11",
        "workers": {"gpu1": {"address": "172.30.20.13", "cpus": 32, "gpus": 4}},
    }
    del hostvars["gpu1"]["__ray_read"]
    with pytest.raises(AnsibleFilterError, match="gpu1 was not read"):
        ray_cluster(hostvars, head="mgmt1", workers=["gpu1"], plan=PLAN, traffic_class="compute")


def test_the_live_addresses_are_read_from_the_head_s_answer_and_none_while_it_does_not_answer():
    listed = (Path(__file__).resolve().parents[2] / "fixtures" / "ray" / "list-nodes.json").read_text()
    assert ray_alive({"rc": 0, "stdout": listed}) == ["172.30.10.11", "172.30.10.13", "172.30.10.14"]
    assert ray_alive({"rc": 1, "stdout": "", "stderr": "Failed to connect to API server"}) == []
    assert ray_alive({"rc": 0, "stdout": "2026-12-05 02:40:03 WARNING ..."}) == []
