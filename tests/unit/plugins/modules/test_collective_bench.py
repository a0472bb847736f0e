from pathlib import Path

from ansible_collections.gpulab.cluster.plugins.modules import collective_bench

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "collective" / "gloo-2nodes-cpu.json"
CALIBRATED = RECORDED.with_name("gloo-2workers-calibrated.txt")


def installed(tmp_path):
    python, script = tmp_path / "python", tmp_path / "bench.py"
    python.write_text("")
    script.write_text("")
    return {"python": str(python), "script": str(script)}


def test_rank0_reports_the_recorded_run(run_module, tmp_path):
    seen = {}

    def run(module, cmd, environ_update=None, **kw):
        seen["cmd"], seen["env"] = cmd, environ_update
        return 0, "torchrun noise\nGPULAB_BENCH_RESULT " + RECORDED.read_text().replace("\n", "") + "\n", ""

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
    result, failed = run_module(collective_bench.main, {"launcher": "srun"})
    assert failed and result["msg"] == "launcher=srun needs hosts: the Slurm nodes to run on"
    result, failed = run_module(collective_bench.main, {"pass_ratio": 1.5})
    assert failed and result["msg"] == "pass_ratio must be in (0, 1], got 1.5"
    result, failed = run_module(collective_bench.main, {"global_batch": 512, "max_batch": 256})
    assert failed and result["msg"] == "max_batch must be at least global_batch (512), got 256"


def scontrol(states):
    """A run_command that answers scontrol from states ({node: (State, Reason)}) and srun with the recording."""
    seen = []

    def run(module, cmd, environ_update=None, **kw):
        seen.append(cmd)
        if cmd[0] == "scontrol":
            state, reason = states[cmd[-1]]
            return 0, f"NodeName={cmd[-1]} Arch=x86_64 State={state} Reason={reason}\n", ""
        return 0, "GPULAB_BENCH_RESULT " + CALIBRATED.read_text().split("GPULAB_BENCH_RESULT ", 1)[1], ""

    return run, seen


def test_srun_leaves_out_a_drained_node_and_says_so(run_module, tmp_path):
    run, seen = scontrol(
        {"gpu1": ("IDLE+DRAIN", "gpulab: validate: gpu_count"), "gpu2": ("IDLE", ""), "gpu3": ("MIXED", "")}
    )
    addresses = {"gpu1": "10.0.0.1", "gpu2": "10.0.0.2"}
    args = dict(installed(tmp_path), launcher="srun", hosts=["gpu1", "gpu2", "gpu3"], addresses=addresses)
    result, failed = run_module(collective_bench.main, dict(args, fail_on="never"), run_command=run)
    assert not failed, result
    srun = seen[-1][2:]
    assert srun[0] == "srun" and "--nodelist=gpu2,gpu3" in srun and "--nodes=2" in srun
    assert "--rdzv-endpoint=10.0.0.2:29500" in srun  # the first node that takes part hosts the rendezvous
    nodes = result["checks"][0]
    assert (nodes["check"], nodes["status"]) == ("collective.nodes", "unavailable")
    assert nodes["message"] == "left out, Slurm cannot run a job there: gpu1 (IDLE+DRAIN: gpulab: validate: gpu_count)"


def test_srun_with_no_usable_node_runs_nothing(run_module, tmp_path):
    run, seen = scontrol({"gpu1": ("DOWN+NOT_RESPONDING", "Not responding")})
    args = dict(installed(tmp_path), launcher="srun", hosts=["gpu1"])
    result, failed = run_module(collective_bench.main, args, run_command=run)
    assert not failed and result["status"] == "unavailable"
    assert [c[0] for c in seen] == ["scontrol"]


def test_link_speed_gives_the_expected_bandwidth(run_module, tmp_path):
    run, _seen = scontrol({})
    args = dict(installed(tmp_path), link_speed_gbps=100, fail_on="never")
    result, failed = run_module(collective_bench.main, args, run_command=run)
    assert not failed and result["expected_busbw"] == 12.0


ABORTED = RECORDED.with_name("torchrun-abort-rank1.txt")


def srun_answers(*answers):
    """A run_command that answers scontrol with an idle node and each srun with the next (rc, stdout, stderr)."""
    seen, queue = [], list(answers)

    def run(module, cmd, environ_update=None, **kw):
        if cmd[0] == "scontrol":
            return 0, f"NodeName={cmd[-1]} State=IDLE Reason=\n", ""
        seen.append(cmd)
        return queue.pop(0)

    return run, seen


def test_a_worker_ended_by_a_signal_is_run_once_more_and_reported(run_module, tmp_path):
    done = (0, "GPULAB_BENCH_RESULT " + CALIBRATED.read_text().split("GPULAB_BENCH_RESULT ", 1)[1], "")
    run, seen = srun_answers((1, "", ABORTED.read_text()), done)
    args = dict(installed(tmp_path), launcher="srun", hosts=["gpu1", "gpu2"], fail_on="never")
    result, failed = run_module(collective_bench.main, args, run_command=run)
    assert not failed and len(seen) == 2 and seen[0] == seen[1]
    retried = result["checks"][0]
    assert (retried["check"], retried["status"], retried["code"]) == ("collective.retried", "warn", "BENCH_RETRIED")
    assert retried["message"] == (
        "the first run failed and was run again: "
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:; "
        "first failure: rank 1 (local_rank: 0) on gpu2, exit code -6 (pid: 10473)  (SIGABRT)"
    )
    assert [c["check"] for c in result["checks"][1:3]] == ["collective.run", "collective.busbw"]


def test_a_second_failure_fails_and_an_error_is_not_retried(run_module, tmp_path):
    args = dict(installed(tmp_path), launcher="srun", hosts=["gpu1", "gpu2"], fail_on="never")
    run, seen = srun_answers((1, "", ABORTED.read_text()), (1, "", ABORTED.read_text()))
    result, _failed = run_module(collective_bench.main, args, run_command=run)
    assert len(seen) == 2 and [c["status"] for c in result["checks"]] == ["warn", "fail"]
    assert result["checks"][1]["code"] == "BENCH_FAILED"
    # A Python error in the worker is the benchmark's own fault: running it again would hide nothing new.
    raised = "RuntimeError: [pair.cc:598] Connection closed by peer [10.0.0.2]:47290\n"
    run, seen = srun_answers((1, "", raised))
    result, _failed = run_module(collective_bench.main, args, run_command=run)
    assert len(seen) == 1 and [c["code"] for c in result["checks"]] == ["BENCH_FAILED"]
    # torchrun on each node (no srun) is not run again: the other nodes' runs would not start with it.
    run, seen = srun_answers((1, "", ABORTED.read_text()))
    result, _failed = run_module(collective_bench.main, dict(installed(tmp_path), fail_on="never"), run_command=run)
    assert len(seen) == 1 and [c["code"] for c in result["checks"]] == ["BENCH_FAILED"]
