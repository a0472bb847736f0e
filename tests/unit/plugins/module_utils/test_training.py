from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import collective, training

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "training"


def recorded(name):
    return (FIXTURES / f"smoke-{name}.out").read_text()


def test_the_recorded_two_node_run_passes_with_its_figures():
    result = training.parse_result(recorded("pass"))
    assert (result["world_size"], result["nodes"], result["epochs_to_target"]) == (2, ["gpu1", "gpu2"], 4)
    record = training.record(2, result, 0.95, 30)
    assert (record.check, record.status, record.value, record.unit) == (
        "training_smoke.2_nodes",
        "pass",
        result["seconds_to_target"],
        "s",
    )
    assert record.message.startswith("95% test accuracy after 4 epochs in ")
    assert record.message.endswith(
        f" s of training (2 ranks on gpu1, gpu2, {result['samples_per_second']:,.0f} samples/s)"
    )
    assert record.threshold == "95% test accuracy within 30 epochs"


def test_a_run_short_of_the_target_fails_naming_how_far_it_got():
    record = training.record(1, training.parse_result(recorded("missed")), 0.95, 2)
    assert (record.check, record.status, record.code, record.value) == (
        "training_smoke.1_node",
        "fail",
        "SMOKE_TARGET_MISSED",
        0.9472,
    )
    assert record.message.startswith("stopped at 94.7% test accuracy after 90 steps, short of 95% within 2 epochs")


def test_a_run_on_fewer_nodes_than_asked_fails():
    result = training.parse_result(recorded("pass"))
    record = training.record(3, result, 0.95, 30)
    assert record.status == "fail" and record.code == "SMOKE_NODES"
    assert record.message == "asked for 3 nodes, the job's ranks ran on 2 (gpu1, gpu2)"


def test_a_cpu_run_where_the_nodes_declare_gpus_fails():
    # The recorded lab run trained on the CPU (gloo): proof of nothing on a cluster that declares GPUs.
    result = training.parse_result(recorded("pass"))
    record = training.record(2, result, 0.95, 30, gpus_per_node=4)
    assert (record.status, record.code, record.value, record.threshold) == ("fail", "SMOKE_DEVICE", "cpu", "cuda")
    assert record.message.startswith("the nodes declare 4 GPU(s) each, but training ran on cpu device")
    assert training.record(2, result, 0.95, 30, gpus_per_node=0).status == "pass"  # no GPUs declared: CPU is it


def test_a_cuda_run_with_fewer_ranks_than_gpus_fails():
    result = dict(training.parse_result(recorded("pass")), device="cuda")
    record = training.record(2, result, 0.95, 30, gpus_per_node=2)
    assert (record.status, record.code, record.value, record.threshold) == ("fail", "SMOKE_WORLD_SIZE", 2, 4)
    assert record.message == "2 ranks ran, 4 expected (2 GPU(s) on each of 2 node(s))"
    assert training.record(2, result, 0.95, 30, gpus_per_node=1).status == "pass"


def test_a_failed_job_has_no_result_and_its_cause_is_summarised():
    text = recorded("failed")
    with pytest.raises(training.SmokeParseError, match="printed no result line"):
        training.parse_result(text)
    assert "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent.npz'" in collective.failure_summary(
        text
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("GPULAB_RESULT {not json", "the result line is not JSON"),
        ('GPULAB_RESULT {"world_size": 2}', "the result line lacks nodes, reached, epochs_to_target"),
        ("GPULAB_RESULT [1, 2]", "the result line lacks world_size"),
    ],
)
def test_a_broken_result_line_is_an_error(text, message):
    with pytest.raises(training.SmokeParseError, match=message):
        training.parse_result(text)


def test_the_job_runs_exactly_on_the_nodes_without_checkpoints():
    cmd = training.submit_command(
        "/usr/local/bin/gpulab-sbatch",
        "/opt/gpulab/jobs/train_digits.py",
        ["gpu1", "gpu2"],
        "/mnt/cephfs/x/o-%j.out",
        0.95,
        30,
        900,
    )
    assert cmd == [
        "/usr/local/bin/gpulab-sbatch",
        "ddp",
        "--nodes=2",
        "--nodelist=gpu1,gpu2",
        "--job-name=gpulab-smoke",
        "--time=15",
        "--output=/mnt/cephfs/x/o-%j.out",
        "--",
        "/opt/gpulab/jobs/train_digits.py",
        "--stop-at-target",
        "--epochs=30",
        "--target-accuracy=0.95",
        "--checkpoint-dir=",
    ]
