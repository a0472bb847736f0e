import json
import os

from ansible_collections.gpulab.cluster.plugins.modules import validation_report

NODES = {
    "gpu1": {"reached": True, "gpu": {"checks": [{"check": "gpu_count", "status": "pass", "message": "2 GPUs"}]}},
    "gpu2": {"reached": True, "gpu": {"checks": [{"check": "ecc", "status": "warn", "message": "ECC pending"}]}},
}


def test_writes_json_html_and_latest(run_module, tmp_path):
    result, failed = run_module(validation_report.main, {"nodes": NODES, "dest": str(tmp_path)}, check_mode=True)
    assert not failed, result
    assert result["changed"] is False and result["verdict"] == "warn"
    out = result["report_dir"]
    assert os.path.realpath(tmp_path / "latest") == os.path.realpath(out)
    data = json.loads((tmp_path / "latest" / "report.json").read_text())
    assert data["failures"][0]["check"] == "ecc"
    assert "ECC pending" in (tmp_path / "latest" / "report.html").read_text()
    again, _failed = run_module(validation_report.main, {"nodes": NODES, "dest": str(tmp_path)})
    assert again["report_dir"] != out and os.path.realpath(tmp_path / "latest") == os.path.realpath(again["report_dir"])


def test_fail_on_warn_fails_naming_the_node(run_module, tmp_path):
    result, failed = run_module(validation_report.main, {"nodes": NODES, "dest": str(tmp_path), "fail_on": "warn"})
    assert failed
    assert result["msg"].startswith("Degraded: see the warnings - 1 finding(s): gpu2 ecc: ECC pending. Report: ")


def test_empty_nodes_refused(run_module, tmp_path):
    result, failed = run_module(validation_report.main, {"nodes": {}, "dest": str(tmp_path)})
    assert failed and result["msg"].startswith("nodes is empty")


def test_a_baseline_is_compared_and_bad_ones_refused(run_module, tmp_path):
    args = {"nodes": NODES, "dest": str(tmp_path / "reports"), "baseline": str(tmp_path / "baseline.json")}
    first, failed = run_module(validation_report.main, args)
    assert not failed and first["changed_since"]["since"] is None  # none stored yet: said, not failed
    assert first["changed_since"]["checks"][0]["code"] == "BASELINE_MISSING"
    (tmp_path / "baseline.json").write_text((tmp_path / "reports" / "latest" / "report.json").read_text())
    second, failed = run_module(validation_report.main, args)
    assert (
        not failed
        and second["changed_since"]["since"] == json.loads((tmp_path / "baseline.json").read_text())["generated"]
    )
    assert second["changed_since"]["regressions"] == []

    (tmp_path / "baseline.json").write_text('{"title": "some other tool"}')
    refused, failed = run_module(validation_report.main, args)
    assert failed and refused["msg"].endswith("is not a gpulab report (it lacks generated, verdict, nodes, cluster)")
    (tmp_path / "baseline.json").write_text(
        json.dumps({"generated": "x", "verdict": "pass", "nodes": {"n9": {}}, "cluster": {}})
    )
    refused, failed = run_module(validation_report.main, args)
    assert failed and "is from another cluster: its nodes are n9, this run's gpu1, gpu2" in refused["msg"]
    (tmp_path / "baseline.json").write_text("{not json")
    refused, failed = run_module(validation_report.main, args)
    assert failed and refused["msg"].startswith(f"baseline {tmp_path}/baseline.json cannot be read as a gpulab report")
    refused, failed = run_module(validation_report.main, {**args, "tolerances": {"bandwidth": "fast"}})
    assert failed and refused["msg"] == "tolerances.bandwidth must be a number of at least 0, got 'fast'"
