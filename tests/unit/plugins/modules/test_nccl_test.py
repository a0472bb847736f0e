import stat
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils.nccl_tests import build_command
from ansible_collections.gpulab.cluster.plugins.modules import nccl_test

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nccl"


def text(name):
    return (FIXTURES / name).read_text()


def records(result):
    return {r["check"]: r for r in result["checks"]}


def test_saved_output_passes(run_module):
    result, failed = run_module(nccl_test.main, {"output": text("current_2node_roce_pass.txt"), "link_speed_gbps": 100})
    assert not failed
    assert result["changed"] is False
    assert result["status"] == "pass"
    assert records(result)["nccl_busbw"] == {
        "check": "nccl_busbw",
        "status": "pass",
        "value": 11.69,
        "threshold": 10.8,
        "unit": "GB/s",
        "message": "busbw at 1073741824-1073741824 B 11.69 GB/s >= 10.8",
        "code": None,
    }
    assert result["result"]["hosts"] == ["gpu1", "gpu2"]


def test_slow_run_fails_the_task_naming_the_check(run_module):
    result, failed = run_module(nccl_test.main, {"output": text("current_2node_slow.txt"), "expected_busbw": 12})
    assert failed
    assert (
        result["msg"]
        == "1 check(s) at or above 'fail': nccl_busbw: busbw at 1073741824-1073741824 B 7.92 GB/s is below 10.8"
    )
    assert result["status"] == "fail"


def test_fail_on_never_only_reports(run_module):
    result, failed = run_module(
        nccl_test.main, {"output": text("current_2node_slow.txt"), "expected_busbw": 12, "fail_on": "never"}
    )
    assert not failed and result["status"] == "fail"


def test_socket_fallback_where_rdma_is_declared_fails(run_module):
    args = {"output": text("mpirun_prefixed_socket.txt"), "expected_busbw": 5.0, "rdma_expected": True}
    result, failed = run_module(nccl_test.main, dict(args, fail_on="never"))
    assert not failed and result["status"] == "fail"
    result, failed = run_module(nccl_test.main, dict(args, fail_on="fail"))
    assert failed and "nccl_transport: NCCL used TCP sockets although the fabric declares RDMA" in result["msg"]


def test_json_file_on_the_node(run_module, tmp_path):
    path = tmp_path / "run.json"
    path.write_text(text("current_2node.json"))
    result, failed = run_module(nccl_test.main, {"output_path": str(path), "expected_busbw": 12})
    assert not failed and records(result)["nccl_busbw"]["value"] == 11.69


def test_missing_binary_is_unavailable_not_a_fault(run_module, tmp_path):
    result, failed = run_module(nccl_test.main, {"tests_dir": str(tmp_path)}, check_mode=True)
    assert not failed
    assert result["status"] == "unavailable"
    assert records(result)["nccl_run"]["message"].startswith(f"nccl-tests binary {tmp_path}/all_reduce_perf not found")


def test_missing_binary_the_inventory_expects_fails(run_module, tmp_path):
    args = {"tests_dir": str(tmp_path), "expected_installed": True, "fail_on": "never"}
    result, failed = run_module(nccl_test.main, args, check_mode=True)
    assert not failed and result["status"] == "fail"
    assert records(result)["nccl_run"]["code"] == "NCCL_TESTS_MISSING"


def test_runs_the_binary_with_the_nccl_environment(run_module, tmp_path):
    binary = tmp_path / "all_reduce_perf"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    seen = {}

    def fake_run(module, cmd, environ_update=None, **kw):
        seen["cmd"], seen["env"] = cmd, environ_update
        return 0, text("current_2node_roce_pass.txt"), ""

    result, failed = run_module(
        nccl_test.main,
        {"tests_dir": str(tmp_path), "env": {"NCCL_DEBUG": "INFO"}, "expected_busbw": 12},
        run_command=fake_run,
    )
    assert not failed
    assert seen["cmd"] == ["timeout", "900", str(binary), "-b", "256M", "-e", "1G", "-f", "2", "-g", "1"]
    assert seen["env"] == {"NCCL_DEBUG": "INFO"}
    assert records(result)["nccl_exit"]["status"] == "pass"


def test_a_run_that_must_use_rdma_is_started_with_nccl_debug_info(run_module, tmp_path):
    binary = tmp_path / "all_reduce_perf"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    seen = []

    def fake_run(module, cmd, environ_update=None, **kw):
        seen.append(environ_update)
        return 0, text("current_2node_roce_pass.txt"), ""

    args = {"tests_dir": str(tmp_path), "expected_busbw": 12, "rdma_expected": True}
    result, failed = run_module(nccl_test.main, dict(args, env={"NCCL_ALGO": "Ring"}), run_command=fake_run)
    assert not failed
    # This recorded run printed no INFO lines (its stand-in ignores NCCL_DEBUG): the transport stays unchecked.
    assert records(result)["nccl_transport"]["status"] == "unavailable"
    result, failed = run_module(nccl_test.main, dict(args, env={"NCCL_DEBUG": "WARN"}), run_command=fake_run)
    assert seen == [{"NCCL_ALGO": "Ring", "NCCL_DEBUG": "INFO"}, {"NCCL_DEBUG": "WARN"}]  # the operator's wins


def test_garbage_output_is_a_clear_error(run_module):
    result, failed = run_module(nccl_test.main, {"output": "Segmentation fault (core dumped)\n"})
    assert failed
    assert result["msg"] == "could not parse nccl-tests output: no nccl-tests column header, data rows or footer found"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"expected_busbw": -1}, "expected_busbw must be greater than 0, got -1.0"),
        ({"link_speed_gbps": 0}, "link_speed_gbps must be greater than 0, got 0.0"),
        ({"pass_ratio": 1.5}, "pass_ratio must be in (0, 1], got 1.5"),
        ({"launcher": "mpirun"}, "launcher=mpirun needs hosts: the nodes to run on"),
        ({"timeout": 0}, "timeout must be at least 1, got 0"),  # timeout(1) reads 0 as no deadline
    ],
)
def test_bad_input_is_refused(run_module, args, message):
    result, failed = run_module(nccl_test.main, args)
    assert failed and result["msg"] == message


def test_mpirun_command_line():
    assert build_command(
        "all_reduce_perf",
        "/opt/nccl-tests/build",
        ["-b", "1G"],
        "mpirun",
        ["gpu1", "gpu2"],
        2,
        {"NCCL_ALGO": "Ring", "NCCL_IB_HCA": "mlx5_0"},
    ) == [
        "mpirun",
        "--allow-run-as-root",
        "-np",
        "4",
        "-H",
        "gpu1:2,gpu2:2",
        "--bind-to",
        "numa",
        "-x",
        "NCCL_ALGO=Ring",
        "-x",
        "NCCL_IB_HCA=mlx5_0",
        "/opt/nccl-tests/build/all_reduce_perf",
        "-b",
        "1G",
    ]


def test_srun_command_line():
    assert build_command(
        "sendrecv_perf", "/opt/nccl-tests/build/", [], "srun", ["gpu1", "gpu2"], 1, {"NCCL_DEBUG": "INFO"}
    ) == [
        "srun",
        "--mpi=pmix",
        "-N",
        "2",
        "--ntasks-per-node",
        "1",
        "--gres=gpu:1",
        "--exclusive",
        "--mem=0",
        "--job-name=gpulab-nccl-tests",
        "-w",
        "gpu1,gpu2",
        "--export=ALL,NCCL_DEBUG=INFO",
        "/opt/nccl-tests/build/sendrecv_perf",
    ]


def test_srun_leaves_out_a_drained_node(run_module, tmp_path):
    binary = tmp_path / "all_reduce_perf"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    seen = []

    def run(module, cmd, environ_update=None, **kw):
        seen.append(cmd)
        if cmd[0] == "scontrol":
            state = "IDLE+DRAIN Reason=gpulab: validate: gpu_count" if cmd[-1] == "gpu2" else "IDLE"
            return 0, f"NodeName={cmd[-1]} State={state}\n", ""
        return 0, text("current_2node_roce_pass.txt"), ""

    args = {"tests_dir": str(tmp_path), "launcher": "srun", "hosts": ["gpu1", "gpu2", "gpu3"], "link_speed_gbps": 100}
    result, failed = run_module(nccl_test.main, args, run_command=run)
    assert not failed, result
    assert "gpu1,gpu3" in seen[-1] and "-N" in seen[-1] and seen[-1][seen[-1].index("-N") + 1] == "2"
    assert result["checks"][0] == {
        "check": "nccl_nodes",
        "status": "unavailable",
        "message": "left out, Slurm cannot run a job there: gpu2 (IDLE+DRAIN: gpulab: validate: gpu_count)",
        "value": None,
        "threshold": None,
        "unit": None,
        "code": None,
    }
    assert result["expected_busbw"] == 12.0
    # One node left: nothing to measure between nodes, and nothing is started.
    seen.clear()
    result, failed = run_module(nccl_test.main, dict(args, hosts=["gpu1", "gpu2"]), run_command=run)
    assert not failed and result["status"] == "unavailable" and [c[0] for c in seen] == ["scontrol", "scontrol"]
