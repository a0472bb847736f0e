import json
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import collective as cb

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "collective" / "gloo-2nodes-cpu.json"


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
    assert cb.build_command("/py", "/b.py", 2, 1, 4, "10.0.0.1", 29500, "/tmp/o.json", ["--steps=5"]) == [
        "/py", "-m", "torch.distributed.run", "--nnodes=2", "--node-rank=1", "--nproc-per-node=4",
        "--master-addr=10.0.0.1", "--master-port=29500", "/b.py", "--output=/tmp/o.json", "--steps=5",
    ]  # fmt: skip
