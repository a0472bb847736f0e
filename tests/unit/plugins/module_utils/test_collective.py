import json
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import collective as cb

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "collective" / "gloo-2nodes-cpu.json"
CALIBRATED = RECORDED.with_name("gloo-2workers-calibrated.txt")


def with_times(t1, tn, workers=2):
    data = json.loads(RECORDED.read_text())
    data["ddp"].update(step_time_1_ms=t1, step_time_n_ms=tn, workers=workers)
    return data


def test_recorded_two_node_gloo_run():
    result = cb.parse_result(RECORDED.read_text())
    records = cb.evaluate(result)
    assert [(r.check, r.status, r.value) for r in records] == [
        ("collective.run", "pass", 2),
        ("collective.busbw", "pass", 0.5306),
        ("scaling_efficiency", "fail", 0.462),  # 90.572 / (2 x 98.058)
    ]
    assert records[0].message == "gloo all-reduce and DDP ran across 2 workers on t-a, t-b"
    assert "look at I/O and synchronisation" in records[2].message


@pytest.mark.parametrize(
    "t1, tn, status, code",
    [
        (100.0, 50.0, "pass", None),  # 100 %
        (100.0, 55.0, "pass", None),  # 90.9 %
        (100.0, 60.0, "warn", "SCALING_NETWORK"),  # 83 %
        (100.0, 71.0, "warn", "SCALING_NETWORK"),  # 70.4 %
        (100.0, 72.0, "fail", "SCALING_POOR"),  # 69.4 %
    ],
)
def test_handbook_bands(t1, tn, status, code):
    record = cb.evaluate(with_times(t1, tn))[-1]
    assert (record.status, record.code) == (status, code)


def test_recorded_one_gpu_nccl_run():
    path = RECORDED.with_name("nccl-1gpu-h200.json")
    records = cb.evaluate(cb.parse_result(path.read_text()), min_busbw_gbs=100.0)
    assert [(r.check, r.status) for r in records] == [
        ("collective.run", "pass"),
        ("collective.busbw", "unavailable"),  # one worker moves nothing: neither pass nor fail
        ("scaling_efficiency", "unavailable"),
    ]
    assert records[0].message == "nccl all-reduce and DDP ran across 1 workers on vm"
    assert records[2].message == "one worker: no scaling to measure (step 1.524 ms)"


def test_one_worker_and_bad_times():
    assert cb.evaluate(with_times(10.0, 10.0, workers=1))[-1].status == "unavailable"
    assert cb.evaluate(with_times(10.0, 0.0))[-1].code == "BENCH_TIMES"
    assert cb.efficiency(100.0, 25.0, 4) == 1.0


def test_busbw_judged_only_when_asked():
    assert cb.evaluate(cb.parse_result(RECORDED.read_text()), min_busbw_gbs=1.0)[1].status == "fail"


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "not JSON"),
        ('{"backend": "gloo", "world_size": 2, "allreduce": [', "not JSON"),
        ('"gloo"', "not a JSON object"),
        ('{"backend": "gloo"}', "lacks world_size, allreduce, ddp"),
        ('{"backend": "gloo", "world_size": 2, "allreduce": [], "ddp": {"workers": 2}}', "ddp entry lacks"),
    ],
)
def test_truncated_and_garbage_results(text, message):
    with pytest.raises(cb.BenchParseError, match=message):
        cb.parse_result(text)


def test_command_uses_a_static_rendezvous():
    assert cb.build_command("/py", "/b.py", 2, 1, 4, "10.0.0.1", 29500, ["--steps=5"]) == [
        "/py", "-m", "torch.distributed.run", "--nnodes=2", "--node-rank=1", "--nproc-per-node=4",
        "--master-addr=10.0.0.1", "--master-port=29500", "/b.py", "--steps=5",
    ]  # fmt: skip


def test_srun_command_is_one_step_with_a_c10d_rendezvous():
    cmd = cb.build_srun_command("/py", "/b.py", ["gpu1", "gpu2"], 2, "10.0.0.1", 29500, ["--steps=5"], "gpu:2")
    assert cmd == [
        "srun", "--nodes=2", "--ntasks-per-node=1", "--nodelist=gpu1,gpu2", "--exclusive", "--mem=0",
        "--job-name=gpulab-bench", "--kill-on-bad-exit=1", "--gres=gpu:2",
        "/py", "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=2", "--rdzv-backend=c10d",
        "--rdzv-endpoint=10.0.0.1:29500", "--rdzv-id=gpulab-bench", "/b.py", "--steps=5",
    ]  # fmt: skip
    assert "--gres=gpu:2" not in cb.build_srun_command("/py", "/b.py", ["a"], 1, "h", 1, [])


def test_recorded_calibrated_run_from_torchrun_output():
    # The worker's whole stdout under torchrun (2 workers on one machine), result line among the rest.
    result = cb.parse_output(CALIBRATED.read_text())
    ddp = result["ddp"]
    assert (result["backend"], result["world_size"], ddp["workers"]) == ("gloo", 2, 2)
    assert ddp["step_time_1_ms"] >= ddp["min_step_ms"] == 50.0  # calibrated until the step was long enough
    checks = {r.check: r for r in cb.evaluate(result)}
    assert list(checks) == ["collective.run", "collective.busbw", "collective.step_time", "scaling_weak",
                            "scaling_efficiency"]  # fmt: skip
    assert checks["collective.step_time"].status == "pass"
    assert checks["collective.step_time"].value == ddp["step_time_1_ms"]
    weak = ddp["step_time_1_ms"] / ddp["step_time_weak_ms"]
    assert (checks["scaling_weak"].status, checks["scaling_weak"].value) == ("pass", round(weak, 3))
    assert checks["scaling_efficiency"].value == round(ddp["step_time_1_ms"] / (2 * ddp["step_time_n_ms"]), 3)


def test_a_step_too_short_to_measure_warns():
    result = cb.parse_output(CALIBRATED.read_text())
    result["ddp"].update(step_time_1_ms=1.5, global_batch=16384)
    record = next(r for r in cb.evaluate(result) if r.check == "collective.step_time")
    assert (record.status, record.code) == ("warn", "BENCH_SHORT_STEP")
    assert "1.5 ms even at batch 16384" in record.message


def test_nccl_across_nodes_is_held_to_the_link_speed():
    # The recorded gloo run relabelled as NCCL: the busbw row is judged against 100GbE's 12 GB/s x 0.9.
    data = json.loads(RECORDED.read_text())
    data["backend"] = "nccl"
    data["allreduce"][-1]["busbw_gbs"] = 11.2
    record = cb.evaluate(data, expected_busbw=12.0)[1]
    assert (record.status, record.threshold) == ("pass", 10.8)
    data["allreduce"][-1]["busbw_gbs"] = 9.1
    record = cb.evaluate(data, expected_busbw=12.0)[1]
    assert (record.status, record.value) == ("fail", 9.1)
    assert "expected 12 GB/s from the link speed" in record.message
    # gloo on CPU is reported, not held to a NIC's line rate.
    assert cb.evaluate(json.loads(RECORDED.read_text()), expected_busbw=12.0)[1].status == "pass"


def test_output_interleaved_with_another_ranks_warning():
    line = CALIBRATED.read_text().strip()
    noisy = f"[W socket.cpp] warning\n{line}/venv/torch/functional_tensor.py:368: UserWarning: NumPy\n"
    assert cb.parse_output(noisy) == cb.parse_output(line)


@pytest.mark.parametrize(
    "text, message",
    [("", "no result line"), ("[W] warn\n", "no result line"), ('GPULAB_BENCH_RESULT {"backend"', "not JSON")],
)
def test_output_without_a_result(text, message):
    with pytest.raises(cb.BenchParseError, match=message):
        cb.parse_output(text)


def test_a_failed_run_is_summed_up_by_its_error_lines():
    # Lines as srun and torchrun print them when one node's worker is killed (wording abridged).
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/gpulab/bench/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py"\n'
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 9633 got signal: 15\n"
        "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=2.0. Some of your processes may have been killed.\n"
        "srun: error: gpu2: task 1: Exited with exit code 1\n"
        "srun: error: gpu2: task 1: Exited with exit code 1\n"
    )
    assert cb.failure_summary(text) == (
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 9633 got signal: 15; "
        "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=2.0. Some of your processes may have been killed.; "
        "srun: error: gpu2: task 1: Exited with exit code 1"
    )
    assert cb.failure_summary("no idea\n") == "no idea"


def test_torchrun_s_root_cause_is_named():
    # torchrun's table when a worker is ended by a signal (here SIGUSR1: exit code -10).
    text = (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "/opt/gpulab/bench/collective_bench.py FAILED\n"
        "------------------------------------------------------------\n"
        "Failures:\n  <NO_OTHER_FAILURES>\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2026-12-03_20:40:45\n"
        "  host      : gpu2\n"
        "  rank      : 1 (local_rank: 0)\n"
        "  exitcode  : -10 (pid: 8500)\n"
        "  error_file: <N/A>\n"
        "  traceback : Signal 10 (SIGUSR1) received by PID 8500\n"
        "============================================================\n"
        "srun: error: gpu2: task 1: Exited with exit code 1\n"
    )
    assert cb.failure_summary(text) == (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:; "
        "srun: error: gpu2: task 1: Exited with exit code 1; "
        "first failure: rank 1 (local_rank: 0) on gpu2, exit code -10 (pid: 8500)"
    )


def test_an_aborting_process_says_why():
    # libstdc++'s words when an exception escapes a thread, as gloo's transport can make it do.
    text = (
        "terminate called after throwing an instance of 'gloo::IoException'\n"
        "  what():  [gloo/transport/tcp/pair.cc:589] Read error [10.0.0.1]:31817: Connection reset by peer\n"
        "srun: error: gpu2: task 1: Exited with exit code 1\n"
    )
    assert cb.failure_summary(text) == (
        "terminate called after throwing an instance of 'gloo::IoException'; "
        "what():  [gloo/transport/tcp/pair.cc:589] Read error [10.0.0.1]:31817: Connection reset by peer; "
        "srun: error: gpu2: task 1: Exited with exit code 1"
    )
    assert not cb.ended_by_signal(text)


def test_a_worker_ended_by_a_signal_is_told_from_one_that_raised():
    recorded = RECORDED.with_name("torchrun-abort-rank1.txt").read_text()
    assert cb.root_cause(recorded) == {
        "host": "gpu2",
        "rank": "1 (local_rank: 0)",
        "exitcode": "-6 (pid: 10473)  (SIGABRT)",
    }
    assert cb.ended_by_signal(recorded)
    assert not cb.ended_by_signal(recorded.replace("exitcode  : -6", "exitcode  : 1"))


# What the worker's sampler folds two readings of a two-GPU node into (tests/unit/test_bench_under_load.py).
UNDER_LOAD = {
    "vm": {
        "host": "vm",
        "error": None,
        "gpus": [
            {"index": 0, "samples": 2, "temperature_max": 66, "sm_clock_min": 1965, "sm_clock_max": 1980,
             "pcie_gen_min": 5, "pcie_gen_max": 5, "pcie_width_min": 16, "event_mask": 0x4},
            {"index": 1, "samples": 2, "temperature_max": 74, "sm_clock_min": 1755, "sm_clock_max": 1980,
             "pcie_gen_min": 4, "pcie_gen_max": 5, "pcie_width_min": 16, "event_mask": 0x84},
        ],
    },
    "vm2": {"host": "vm2", "error": "nvidia-smi exited 18: Failed to initialize NVML", "gpus": []},
}  # fmt: skip


def test_the_gpus_under_load_are_records_of_their_own():
    result = cb.parse_result(RECORDED.with_name("nccl-1gpu-h200.json").read_text())
    result["under_load"] = UNDER_LOAD
    records = [r for r in cb.evaluate(result) if r.check.startswith("load.")]
    assert [(r.check, r.status, r.value, r.code) for r in records] == [
        ("load.vm.gpu0.temperature", "pass", 66, None),
        ("load.vm.gpu0.sm_clock", "pass", 1965, None),
        ("load.vm.gpu0.pcie_width", "pass", 16, None),
        ("load.vm.gpu0.pcie_gen", "pass", 5, None),
        ("load.vm.gpu0.clock_events", "pass", ["sw_power_cap"], None),
        ("load.vm.gpu1.temperature", "pass", 74, None),
        ("load.vm.gpu1.sm_clock", "pass", 1755, None),
        ("load.vm.gpu1.pcie_width", "pass", 16, None),
        ("load.vm.gpu1.pcie_gen", "warn", 4, "PCIE_GEN"),
        ("load.vm.gpu1.clock_events", "warn", ["sw_power_cap", "hw_power_brake_slowdown"], "GPU_HW_SLOWDOWN"),
        ("load.vm2", "unavailable", None, None),
    ]
    assert records[1].message == "SM clock at least 1965 MHz of 1980 MHz in 2 reading(s) during the DDP steps"
    assert records[8].message.startswith("PCIe gen 4 under load; the card and slot allow gen 5")
    assert (
        records[10].message == "the GPUs could not be read under load: nvidia-smi exited 18: Failed to initialize NVML"
    )
    # On CPU (gloo) there is nothing to read: no records, not "unavailable".
    assert not [r for r in cb.evaluate(cb.parse_result(RECORDED.read_text())) if r.check.startswith("load.")]
