import json
from pathlib import Path

from ansible_collections.gpulab.cluster.plugins.filter import validate as validate_filters
from ansible_collections.gpulab.cluster.plugins.module_utils import collective, nccl_tests, report, training
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import not_applicable, passed

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RECORDED = FIXTURES / "collective" / "gloo-2nodes-cpu.json"


def rec(check, status, message="m", **kw):
    return {"check": check, "status": status, "message": message, **kw}


def network(peer, gbps, status="pass"):
    return {
        "status": status,
        "checks": [rec(f"bandwidth.{peer}", status, f"TCP to {peer}"), rec(f"mtu.{peer}", "pass")],
        "results": [{"name": peer, "received_gbps": gbps}],
        "min_gbps": 5.0,
    }


def inputs():
    bench = collective.parse_result(RECORDED.read_text())
    nodes = {
        "gpu1": {
            "reached": True,
            "gpu": {"status": "unavailable", "checks": [rec("gpu_count", "unavailable", "nvidia-smi not found")]},
            "rdma": {"skipped": True},
            "nccl": {"skipped": True},
            "network": network("gpu2", 9.3),
        },
        "gpu2": {
            "reached": True,
            "gpu": {"failed": True, "msg": "could not read nvidia-smi output: <garbage>"},
            "network": network("gpu1", None, "fail"),
        },
        "mgmt1": {"reached": False},
    }
    cluster = {
        "consistency": {"checks": [rec("consistency.os", "pass"), rec("consistency.driver", "unavailable")]},
        "collective": {
            "role": "reporter",
            "checks": [c.as_dict() for c in collective.evaluate(bench)],
            "result": bench,
            "efficiency": 0.462,
        },
    }
    return nodes, cluster


def test_build_gives_one_verdict_and_orders_failures():
    nodes, cluster = inputs()
    data = report.build(nodes, cluster, "2026-11-30T12:00:00+00:00")
    assert data["verdict"] == "fail" and data["verdict_text"] == "Failing: see what failed"
    assert [(f["status"], f["node"], f["section"], f["check"]) for f in data["failures"]] == [
        ("fail", "cluster", "collective", "scaling_efficiency"),
        ("fail", "gpu2", "gpu", "error"),
        ("fail", "gpu2", "network", "bandwidth.gpu1"),
        ("fail", "mgmt1", "node", "reachable"),
    ]
    assert data["failures"][1]["message"] == "the check could not complete: could not read nvidia-smi output: <garbage>"
    assert data["node_problems"] == {
        "gpu2": "error: the check could not complete: could not read nvidia-smi output: <garbage>",
        "mgmt1": "reachable: no results from this node: unreachable, or a task failed before the checks",
    }
    assert {h: n["status"] for h, n in data["nodes"].items()} == {"gpu1": "pass", "gpu2": "fail", "mgmt1": "fail"}
    gpu1 = data["nodes"]["gpu1"]["sections"]
    assert {k: v["status"] for k, v in gpu1.items()} == {
        "gpu": "unavailable",
        "slurm": "not run",  # no slurm_health result: a cluster without Slurm
        "rdma": "skipped",
        "nccl": "skipped",
        "network": "pass",
        "host": "not run",  # an inventory of reports from before the clock and MTU checks
    }
    assert data["cluster"]["consistency"]["status"] == "pass"  # os passed; no driver anywhere is not a fault
    assert data["network_matrix"] == {"gpu1": {"gpu2": 9.3}, "gpu2": {"gpu1": None}}
    assert data["network_min_gbps"] == 5.0
    assert data["counts"] == {"pass": 6, "warn": 0, "fail": 4, "unavailable": 2, "n/a": 0}
    json.dumps(data)  # the report is plain JSON


def test_only_unavailable_is_healthy_where_checked():
    data = report.build({"gpu1": {"reached": True, "network": network("gpu2", 9.0)}}, {}, "t")
    assert (data["verdict"], data["verdict_text"]) == ("pass", "Healthy")
    gpu_only = {"gpu1": {"reached": True, "gpu": {"checks": [rec("gpu_count", "unavailable")]}}}
    data = report.build(gpu_only, {"consistency": {"checks": [rec("consistency.os", "pass")]}}, "t")
    assert (data["verdict"], data["verdict_text"]) == ("pass", "Healthy where it could be checked")


def test_html_is_self_contained_and_escaped():
    nodes, cluster = inputs()
    page = report.render_html(report.build(nodes, cluster, "2026-11-30T12:00:00+00:00"), 0.9, 0.7)
    assert page.startswith("<!doctype html>")
    assert "<script" not in page and "http://" not in page and "https://" not in page and "<link" not in page
    assert "id='verdict' data-status='fail'" in page
    assert "&lt;garbage&gt;" in page and "<garbage>" not in page
    assert page.count("<polyline") == 1  # the all-reduce series
    assert ">failed</td>" in page  # the gpu2 -> gpu1 cell of the heat map
    assert "46%</text>" in page  # the efficiency marker
    assert "<code>--skip-tags validate_network</code>" in page


def test_empty_charts_say_so():
    page = report.render_html(report.build({"gpu1": {"reached": True}}, {}, "t"))
    assert "No measurements to plot." in page and "No bandwidth measured" in page and "Scaling not measured" in page


def test_the_chart_plots_what_the_nccl_parser_returns():
    # The contract between parser, module and report: nccl_test returns result=NcclResult.as_dict().
    parsed = nccl_tests.parse_text((FIXTURES / "nccl" / "current_2node_roce_pass.txt").read_text())
    checks = [c.as_dict() for c in nccl_tests.evaluate(parsed, rc=0, expected=12.0)]
    nodes = {"gpu1": {"reached": True, "nccl": {"checks": checks, "result": parsed.as_dict()}}}
    data = report.build(nodes, {}, "t")
    series = report._busbw_series(data)
    assert series == {"nccl-tests all_reduce in gpu1": [(r.size, r.best_busbw) for r in parsed.rows]}
    assert report.render_html(data).count("<polyline") == 1


def test_not_applicable_never_changes_a_verdict():
    geforce = [passed("gpu0.temperature", "34 C").as_dict(), not_applicable("gpu0.ecc_uncorrected", "no ECC").as_dict()]
    data = report.build({"gpu1": {"reached": True, "gpu": {"checks": geforce}}}, {}, "t")
    assert (data["verdict"], data["verdict_text"]) == ("pass", "Healthy")
    assert data["counts"]["n/a"] == 1 and data["failures"] == []
    only_na = {"gpu1": {"reached": True, "gpu": {"checks": geforce[1:]}}}
    assert report.build(only_na, {"consistency": {"checks": [rec("consistency.os", "pass")]}}, "t")["verdict"] == "pass"
    assert "1 do not apply to this hardware" in report.render_html(data)


def test_the_banner_lists_each_failing_record():
    nodes, cluster = inputs()
    data = report.build(nodes, cluster, "t")
    page = report.render_html(data)
    banner = page.split("id='verdict'", 1)[1].split("</div>", 1)[0]
    assert banner.count("<li>") == len(data["failures"]) == 4
    assert "<li>gpu2 &middot; bandwidth.gpu1: TCP to gpu1</li>" in banner
    assert "<ul" not in report.render_html(report.build({"gpu1": {"reached": True}}, {}, "t")).split("</div>")[1]


def test_a_check_that_errored_under_failed_when_false_fails():
    # What Ansible registers for a module's fail_json with failed_when: false: failed is false.
    errored = {"failed": False, "failed_when_result": False, "msg": "could not parse nccl-tests output: no rows"}
    sec = report.section(errored)
    assert sec["status"] == "fail"
    assert sec["checks"][0]["message"] == "the check could not complete: could not parse nccl-tests output: no rows"
    assert report.section({"changed": False, "checks": [], "role": "worker"})["status"] == "skipped"


def test_a_check_that_returned_no_records_fails_the_report_and_the_gate():
    # A module that ran cleanly but judged nothing (an empty list) is no evidence of health.
    empty = {"changed": False, "checks": [], "msg": "no GPUs listed"}
    sec = report.section(empty)
    assert (sec["status"], sec["checks"][0]["code"]) == ("fail", "NO_CHECKS")
    assert sec["checks"][0]["message"] == "the check ran but returned no records (no GPUs listed)"
    data = report.build({"gpu1": {"reached": True, "gpu": empty}}, {}, "t")
    assert data["verdict"] == "fail"
    assert data["node_problems"] == {"gpu1": "no_records: the check ran but returned no records (no GPUs listed)"}
    hostvars = {"gpu1": {"__validation_gpu": empty, "__validation_versions": {"versions": {}}}}
    assert validate_filters.gate_problems(hostvars, "gpu1") == [
        "gpu no_records: the check ran but returned no records (no GPUs listed)"
    ]


def test_the_training_smoke_benchmark_has_its_section_and_table():
    nodes, cluster = inputs()
    one = training.parse_result((FIXTURES / "training" / "smoke-missed.out").read_text())
    two = training.parse_result((FIXTURES / "training" / "smoke-pass.out").read_text())
    cluster["training"] = {
        "checks": [training.record(1, one, 0.95, 2).as_dict(), training.record(2, two, 0.95, 30).as_dict()],
        "runs": {"1": one, "2": two},
    }
    data = report.build(nodes, cluster, "t")
    assert data["cluster"]["training"]["status"] == "fail" and data["training"] == {"1": one, "2": two}
    assert ("fail", "cluster", "training", "training_smoke.1_node") in [
        (f["status"], f["node"], f["section"], f["check"]) for f in data["failures"]
    ]
    page = report.render_html(data)
    table = page.split("id='training'>", 1)[1].split("</div>", 1)[0]
    assert table.count("<tr><td>") == 2
    assert (
        f"<td>2</td><td>2</td><td>{report._pill('pass')}</td><td>4</td><td>{two['seconds_to_target']:.2f}</td>" in table
    )
    assert "<td>gpu1, gpu2</td>" in table
    assert "trained with DDP until 95% test accuracy within 2 epochs" in table and "It is not MLPerf." in table


def test_without_the_smoke_benchmark_the_section_says_not_run():
    nodes, cluster = inputs()
    data = report.build(nodes, cluster, "t")
    assert data["cluster"]["training"]["status"] == "not run" and data["training"] == {}
    assert "Not run (it runs as Slurm jobs once the training role is applied)." in report.render_html(data)
