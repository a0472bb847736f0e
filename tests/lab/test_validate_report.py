"""The lab's validation report holds real measurements, and a browser shows its verdict."""

import subprocess

from pngread import banner_rows, png_rows

LAB_NODES = {"mgmt1", "storage1", "gpu1", "gpu2"}


def test_verdict_is_not_failing_and_covers_every_node(report):
    assert set(report["nodes"]) == LAB_NODES
    assert report["verdict"] in ("pass", "warn"), report["failures"]
    assert all(f["status"] == "warn" for f in report["failures"])


def test_gpu_checks_say_why_they_could_not_run(report):
    for host in ("gpu1", "gpu2"):
        gpu = report["nodes"][host]["sections"]["gpu"]
        assert gpu["status"] == "unavailable"
        assert any("nvidia-smi" in c["message"] for c in gpu["checks"]), gpu["checks"]
    assert report["nodes"]["mgmt1"]["sections"]["gpu"]["status"] == "skipped"


def test_iperf3_measured_every_pair(report):
    matrix = report["network_matrix"]
    pairs = [(a, b) for a in LAB_NODES for b in LAB_NODES if a != b]
    assert sorted((a, b) for a in matrix for b in matrix[a]) == sorted(pairs)
    assert all(matrix[a][b] >= report["network_min_gbps"] for a, b in pairs), matrix
    for host in LAB_NODES:
        mtu = [c for c in report["nodes"][host]["sections"]["network"]["checks"] if c["check"].startswith("mtu.")]
        assert [(c["status"], c["value"]) for c in mtu] == [("pass", 1500)] * 3


def test_gloo_benchmark_ran_on_both_compute_nodes(report):
    result = report["collective"]["result"]
    assert (result["backend"], result["world_size"], result["hosts"]) == ("gloo", 2, ["gpu1", "gpu2"])
    sizes = [row["bytes"] for row in result["allreduce"]]
    assert sizes == [4096, 65536, 1048576, 16777216]  # the CPU sweep
    assert all(row["busbw_gbs"] > 0 for row in result["allreduce"])
    ddp = result["ddp"]
    assert ddp["step_time_1_ms"] >= ddp["min_step_ms"] and ddp["step_time_n_ms"] > 0 and ddp["step_time_weak_ms"] > 0
    checks = {c["check"]: c for c in report["cluster"]["collective"]["checks"]}
    assert checks["collective.step_time"]["status"] == "pass"
    assert checks["scaling_weak"]["value"] == round(ddp["step_time_1_ms"] / ddp["step_time_weak_ms"], 3)
    efficiency = ddp["step_time_1_ms"] / (2 * ddp["step_time_n_ms"])
    assert abs(report["collective"]["efficiency"] - efficiency) < 1e-9
    record = next(c for c in report["cluster"]["collective"]["checks"] if c["check"] == "scaling_efficiency")
    assert record["value"] == round(efficiency, 3)


def test_benchmark_ran_as_a_slurm_job_on_both_nodes(report):
    # Slurm runs in the lab, so the benchmark is one srun job step with torchrun on each node.
    job = report["collective"]["result"]["slurm_job_id"]
    assert job, "the benchmark did not run under Slurm"
    sacct = ["docker", "exec", "mgmt1", "sacct", "-n", "-P", "-X", "-j", job, "-o", "JobName,NNodes,NodeList,State"]
    assert subprocess.run(sacct, capture_output=True, text=True, check=True).stdout.split() == [
        "gpulab-bench|2|gpu[1-2]|COMPLETED"
    ]


def test_training_smoke_benchmark_reached_its_target_on_one_and_two_nodes(report):
    checks = {c["check"]: c for c in report["cluster"]["training"]["checks"]}
    assert [(name, c["status"]) for name, c in checks.items()] == [
        ("training_smoke.1_node", "pass"),
        ("training_smoke.2_nodes", "pass"),
    ]
    runs = report["training"]
    assert {n: (r["world_size"], r["nodes"], r["reached"]) for n, r in runs.items()} == {
        "1": (1, ["gpu1"], True),
        "2": (2, ["gpu1", "gpu2"], True),
    }
    assert all(1 <= r["epochs_to_target"] <= 30 and r["final_accuracy"] >= 0.95 for r in runs.values())
    assert all(r["target_accuracy"] == 0.95 and r["samples_per_second"] > 0 for r in runs.values()), runs
    assert checks["training_smoke.2_nodes"]["value"] == runs["2"]["seconds_to_target"]
    sacct = ["docker", "exec", "mgmt1", "sacct", "-n", "-P", "-X", "--name", "gpulab-smoke", "-o", "NNodes,State"]
    states = subprocess.run(sacct, capture_output=True, text=True, check=True).stdout.split()
    assert {"1|COMPLETED", "2|COMPLETED"} <= set(states), states


def test_versions_compared(report):
    checks = {c["check"]: c for c in report["cluster"]["consistency"]["checks"]}
    assert checks["consistency.os"]["status"] == "pass"
    assert checks["consistency.kernel"]["status"] == "pass"
    # The lab's training frameworks, one version on both compute nodes (the management and storage nodes have none).
    frameworks = {
        name: checks[f"consistency.{name}"] for name in ("pytorch", "deepspeed", "webdataset", "scikit-learn")
    }
    assert {name: (c["status"], c["value"]) for name, c in frameworks.items()} == {
        "pytorch": ("pass", "2.13.0+cpu"),
        "deepspeed": ("pass", "0.19.8"),
        "webdataset": ("pass", "1.0.2"),
        "scikit-learn": ("pass", "1.9.1"),
    }
    assert "consistency.tensorflow" not in checks  # not in the lab's training_frameworks


def test_cost_section_holds_the_lab_s_inputs_and_base_loads(report):
    cost = report["cost"]
    assert cost["settings"] == {
        "price_per_kwh": 0.3,
        "base_watts": 60.0,
        "utilization": 0.5,
        "years": 3.0,
        "hardware_cost": 2000.0,
        "cloud_gpu_hour": 1.2,
        "currency": "EUR",
    }
    # No GPUs declared or found anywhere in the lab: every node is its base load.
    assert {host: (n["gpus"], n["average_w"]) for host, n in cost["nodes"].items()} == dict.fromkeys(
        LAB_NODES, (0, 60.0)
    )
    assert cost["not_measured"] == []
    # Prometheus on mgmt1 was asked and has no GPU utilization (no GPUs): the inventory's 0.5 stands.
    assert cost["utilization"] == {"value": 0.5, "measured": False}
    # 240 W all year: 2102.4 kWh, 630.72 EUR a year, 2000 + 3 years of it; no GPU-hours to rent.
    assert cost["totals"] == {
        "average_w": 240.0,
        "kwh_per_year": 2102.4,
        "energy_per_year": 630.72,
        "gpus": 0,
        "gpu_hours": 0,
        "homelab": 3892.16,
        "cloud": 0.0,
        "homelab_per_gpu_hour": None,
    }


def test_browser_renders_the_verdict(report, browser):
    dom = browser("--dump-dom")
    assert f'id="verdict" data-status="{report["verdict"]}"' in dom
    assert report["verdict_text"] in dom
    assert dom.count("<tr><th>") >= 2 * len(LAB_NODES)  # node table and heat map rows
    assert dom.count("<polyline") == 1  # the torch all-reduce curve (no nccl-tests without GPUs)
    cost = dom.split('id="cost"', 1)[1].split("</div>", 1)[0]
    assert "<td>Energy per year</td><td>2,102.4 kWh = 630.72 EUR</td>" in cost, cost
    smoke = dom.split('id="training"', 1)[1].split("</div>", 1)[0]
    assert smoke.count("<tr><td>") == 2 and "<td>gpu1, gpu2</td>" in smoke and "It is not MLPerf." in smoke, smoke


def test_screenshot_shows_the_verdict_banner(report, browser, tmp_path):
    browser("--screenshot=/out/report.png", "--window-size=1280,2300", out_dir=tmp_path)
    width, height, rows = png_rows((tmp_path / "report.png").read_bytes())
    assert (width, height) == (1280, 2300)
    banner_rows(rows, report["verdict"])
    # Below the banner the page has content: many distinct colours (text, tables, charts).
    assert len({px for row in rows[400:1800:7] for px in row[::5]}) > 50


def test_the_scheduler_section_shows_preemption_and_its_tiers(report):
    checks = {c["check"]: c for c in report["cluster"]["scheduler"]["checks"]}
    assert checks["slurm.preemption"]["message"] == "PreemptType=preempt/qos, PreemptMode=REQUEUE"
    tiers = checks["slurm.qos"]["message"].split("; ")
    assert "scavenger: priority 0, preempted by normal, interactive (requeue, 120 s grace)" in tiers
    assert "interactive: priority 1000, at most 04:00:00" in tiers


def test_the_ray_section_holds_both_workers_alive(report):
    ray = report["cluster"]["ray"]
    assert [(c["check"], c["status"]) for c in ray["checks"]] == [
        ("ray.worker.gpu1", "pass"),
        ("ray.worker.gpu2", "pass"),
        ("ray.workers", "pass"),
    ], ray
    assert (ray["status"], ray["checks"][-1]["value"], ray["checks"][-1]["threshold"]) == ("pass", 2, 2)
