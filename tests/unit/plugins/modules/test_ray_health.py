"""ray_health with a stand-in `ray` in a stand-in environment: a real process, as the module runs it."""

import json
import time
from pathlib import Path

from ansible_collections.gpulab.cluster.plugins.modules import ray_health

LISTED = Path(__file__).resolve().parents[2] / "fixtures" / "ray" / "list-nodes.json"
WORKERS = {
    "gpu1": {"address": "172.30.10.13", "cpus": 2, "gpus": 1},
    "gpu2": {"address": "172.30.10.14", "cpus": 2, "gpus": 1},
}


def deployed(tmp_path, ray_script):
    (tmp_path / "bin").mkdir()
    ray = tmp_path / "bin" / "ray"
    ray.write_text(ray_script)
    ray.chmod(0o755)
    described = tmp_path / "ray-cluster.json"
    described.write_text(
        json.dumps(
            {
                "env_dir": str(tmp_path),
                "dashboard": "http://172.30.10.11:8265",
                "head": "mgmt1",
                "address": "172.30.10.11",
                "workers": WORKERS,
            }
        )
    )
    return str(described)


def test_the_head_s_nodes_are_held_to_the_described_cluster(run_module, tmp_path):
    # The stand-in checks its arguments: the dashboard's address, JSON, every node.
    script = (
        '#!/bin/sh\n[ "$*" = "list nodes --format json --limit 10000 --address http://172.30.10.11:8265" ] '
        f"|| exit 9\ncat {LISTED}\n"
    )
    result, failed = run_module(ray_health.main, {"cluster_file": deployed(tmp_path, script)}, check_mode=True)
    assert not failed and result["status"] == "pass", result
    assert [c["check"] for c in result["checks"]] == ["ray.worker.gpu1", "ray.worker.gpu2", "ray.workers"]


def test_a_head_that_does_not_answer_in_time_fails_within_the_deadline(run_module, tmp_path):
    path = deployed(tmp_path, "#!/bin/sh\nexec sleep 60\n")
    started = time.monotonic()
    result, failed = run_module(ray_health.main, {"cluster_file": path, "timeout": 1, "fail_on": "never"})
    assert time.monotonic() - started < 10
    assert not failed and [(c["check"], c["code"]) for c in result["checks"]] == [("ray.workers", "RAY_HEAD_DOWN")]
    assert "did not answer in 1 s" in result["checks"][0]["message"]


def test_a_head_that_refuses_says_what_ray_said(run_module, tmp_path):
    path = deployed(tmp_path, "#!/bin/sh\necho 'ConnectionError: Failed to connect to API server.' >&2\nexit 1\n")
    result, failed = run_module(ray_health.main, {"cluster_file": path, "fail_on": "never"})
    assert not failed and result["checks"][0]["code"] == "RAY_HEAD_DOWN"
    assert "did not list its nodes: ConnectionError: Failed to connect to API server." in result["checks"][0]["message"]


def test_without_the_head_s_description_ray_is_not_deployed_unavailable_in_check_mode_or_not_applicable(
    run_module, tmp_path
):
    missing = {"cluster_file": str(tmp_path / "none.json"), "fail_on": "never"}
    results = [
        run_module(ray_health.main, missing),
        run_module(ray_health.main, missing, check_mode=True),
        run_module(ray_health.main, {**missing, "expected": False}),
    ]
    assert [(failed, [(c["status"], c["code"]) for c in result["checks"]]) for result, failed in results] == [
        (False, [("fail", "RAY_NOT_DEPLOYED")]),
        (False, [("unavailable", None)]),
        (False, [("n/a", None)]),
    ]
