"""Contract: what the modules return is what the report builder reads, for every chart source."""

from pathlib import Path

from ansible_collections.gpulab.cluster.plugins.module_utils import report
from ansible_collections.gpulab.cluster.plugins.modules import collective_bench, nccl_test

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_every_source_is_a_curve_against_the_expected_line(run_module, tmp_path):
    # Real module output into the report: in-node and across-node nccl-tests (module runs on recorded
    # output) and the calibrated torch benchmark (module on recorded worker output).
    across, _failed = run_module(
        nccl_test.main,
        {"output": (FIXTURES / "nccl" / "current_2node_roce_pass.txt").read_text(), "link_speed_gbps": 100},
    )
    inside, _failed = run_module(nccl_test.main, {"output": (FIXTURES / "nccl" / "v2.13_8gpu_sweep.txt").read_text()})
    python, script = tmp_path / "python", tmp_path / "bench.py"
    python.write_text("")
    script.write_text("")
    calibrated = (FIXTURES / "collective" / "gloo-2workers-calibrated.txt").read_text()
    bench, _failed = run_module(
        collective_bench.main,
        {"python": str(python), "script": str(script), "fail_on": "never"},
        run_command=lambda *a, **k: (0, calibrated, ""),
    )
    nodes = {"gpu1": {"reached": True, "nccl": inside}, "gpu2": {"reached": True}}
    data = report.build(nodes, {"nccl_across": across, "collective": bench}, "t")
    assert data["cluster"]["nccl_across"]["status"] == "pass"
    assert data["expected_busbw"] == 12.0
    assert sorted(report._busbw_series(data)) == [
        f"nccl-tests all_reduce across {', '.join(sorted(set(across['result']['hosts'])))}",
        "nccl-tests in gpu1",  # this fixture's header does not name its collective
        "torch gloo all-reduce, 2 workers",
    ]
    page = report.render_html(data)
    assert page.count("<polyline") == 3
    assert page.count('class="expected"') == 1 and "expected 12 GB/s (the plan&#x27;s link speed)" in page
    assert "Weak scaling (information)" in page and "at least 50.0 ms" in page
