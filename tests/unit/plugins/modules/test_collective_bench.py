from pathlib import Path

from ansible_collections.gpulab.cluster.plugins.modules import collective_bench

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "collective" / "gloo-2nodes-cpu.json"


def installed(tmp_path):
    python, script = tmp_path / "python", tmp_path / "bench.py"
    python.write_text("")
    script.write_text("")
    return {"python": str(python), "script": str(script)}


def test_rank0_reports_the_recorded_run(run_module, tmp_path):
    seen = {}

    def run(module, cmd, environ_update=None, **kw):
        seen["cmd"], seen["env"] = cmd, environ_update
        output = next(a for a in cmd if a.startswith("--output=")).split("=", 1)[1]
        Path(output).write_text(RECORDED.read_text())
        return 0, "", ""

    args = dict(installed(tmp_path), nnodes=2, master_addr="172.30.10.13", threads=1, efficiency_acceptable=0.4)
    result, failed = run_module(collective_bench.main, args, run_command=run, check_mode=True)
    assert not failed, result
    assert seen["cmd"][:2] == ["timeout", "600"] and "--node-rank=0" in seen["cmd"]
    assert seen["env"] == {"OMP_NUM_THREADS": "1"}
    assert result["role"] == "reporter" and round(result["efficiency"], 3) == 0.462
    assert [(c["check"], c["status"]) for c in result["checks"]] == [
        ("collective.run", "pass"),
        ("collective.busbw", "pass"),
        ("scaling_efficiency", "warn"),
    ]


def test_worker_rank_returns_no_records(run_module, tmp_path):
    args = dict(installed(tmp_path), nnodes=2, node_rank=1, master_addr="172.30.10.13")
    result, failed = run_module(collective_bench.main, args, run_command=lambda *a, **k: (0, "", ""))
    assert not failed and result["role"] == "worker" and result["checks"] == []


def test_hung_rendezvous_fails_with_a_hint(run_module, tmp_path):
    args = dict(installed(tmp_path), nnodes=2, master_addr="172.30.10.13", timeout=30)
    result, failed = run_module(collective_bench.main, args, run_command=lambda *a, **k: (124, "", ""))
    assert failed
    assert "did not finish in 30 s: a node did not join the rendezvous at 172.30.10.13:29500" in result["msg"]


def test_missing_torch_is_unavailable(run_module, tmp_path):
    result, failed = run_module(collective_bench.main, {"python": str(tmp_path / "none")})
    assert not failed and result["checks"][0]["code"] == "BENCH_MISSING"
    crash = "ModuleNotFoundError: No module named 'torch'\n"
    result, failed = run_module(collective_bench.main, installed(tmp_path), run_command=lambda *a, **k: (1, "", crash))
    assert not failed and result["status"] == "unavailable"


def test_bad_input_is_refused(run_module):
    result, failed = run_module(collective_bench.main, {"nnodes": 2, "node_rank": 2})
    assert failed and result["msg"] == "node_rank must be 0 to nnodes - 1 (1), got 2"
    result, failed = run_module(collective_bench.main, {"efficiency_acceptable": -1})
    assert failed and result["msg"].startswith("efficiency thresholds must satisfy")
    result, failed = run_module(collective_bench.main, {"steps": 0})
    assert failed and result["msg"] == "steps must be at least 1, got 0"
