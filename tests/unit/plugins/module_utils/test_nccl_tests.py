import json
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils.nccl_tests import (
    NcclParseError,
    evaluate,
    parse_json,
    parse_text,
)
from ansible_collections.gpulab.cluster.plugins.module_utils.plan import expected_busbw

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nccl"


def load(name):
    return parse_text((FIXTURES / name).read_text())


def by_check(records):
    return {r.check: r for r in records}


def test_current_format_two_nodes():
    result = load("current_2node_roce_pass.txt")
    assert result.version == "2.19.6"
    assert result.collective == "all_reduce"
    assert [r["host"] for r in result.ranks] == ["gpu1", "gpu2"]
    assert result.ranks[0] == {
        "rank": 0,
        "pid": 895544,
        "host": "gpu1",
        "device": 0,
        "bus_id": "0000:41:00",
        "gpu": "NVIDIA GeForce RTX 4090",
    }
    (row,) = result.rows
    assert (row.size, row.count, row.dtype, row.redop, row.root) == (1073741824, 268435456, "float", "sum", -1)
    assert (row.out_of_place.time_us, row.out_of_place.algbw, row.out_of_place.busbw, row.out_of_place.wrong) == (
        92012.3,
        11.67,
        11.67,
        0,
    )
    assert row.in_place.busbw == 11.69
    assert (result.oob_count, result.oob_ok, result.avg_busbw, result.avg_ok) == (0, True, 11.6812, None)
    assert result.validated is True and result.complete


def test_current_format_passes_against_100g_link():
    checks = by_check(evaluate(load("current_2node_roce_pass.txt"), rc=0, expected=expected_busbw(100)))
    assert expected_busbw(100) == 12.0
    busbw = checks["nccl_busbw"]
    assert (busbw.status, busbw.value, busbw.threshold, busbw.unit) == ("pass", 11.69, 10.8, "GB/s")
    assert checks["nccl_exit"].status == "pass"
    assert checks["nccl_correctness"].status == "pass"


def test_slow_link_fails_with_code():
    checks = by_check(evaluate(load("current_2node_slow.txt"), rc=0, expected=12.0))
    busbw = checks["nccl_busbw"]
    assert (busbw.status, busbw.value, busbw.threshold, busbw.code) == ("fail", 7.92, 10.8, "NCCL_SLOW")
    assert busbw.message == "busbw at 1073741824-1073741824 B 7.92 GB/s is below 10.8"


def test_sweep_is_judged_on_large_messages_not_the_average():
    result = load("v2.13_8gpu_sweep.txt")
    assert result.version is None
    assert len(result.ranks) == 8 and result.ranks[7]["bus_id"] == "0xe1"
    assert len(result.rows) == 32  # 8 B .. 16 GiB
    assert result.avg_busbw == 12.3408  # dragged down by small messages
    busbw = by_check(evaluate(result, rc=0, expected=24.6))["nccl_busbw"]
    assert (busbw.status, busbw.value) == ("pass", 24.6)
    assert busbw.message.startswith("busbw at 268435456-17179869184 B")


def test_wrong_results_fail():
    result = load("current_wrong_results.txt")
    assert [r.wrong for r in result.rows] == [0, 6, 0]  # 3 wrong in each half at 256 MiB
    assert (result.oob_count, result.oob_ok) == (1, False)
    checks = by_check(evaluate(result, rc=7, expected=12.0))
    assert checks["nccl_correctness"].status == "fail"
    assert checks["nccl_correctness"].message == (
        "wrong results: 6 wrong elements at sizes [268435456], out-of-bounds footer 1"
    )
    assert checks["nccl_exit"].message == "nccl-tests exited 7 (wrong results or below NCCL_TESTS_MIN_BW)"


def test_pre_2_13_error_column_is_not_a_failure():
    result = load("v2.11_error_column.txt")
    assert result.has_error_column
    assert [r.redop for r in result.rows] == ["sum"] * 3 and result.rows[0].root is None
    assert result.rows[0].out_of_place.wrong is None
    assert [r["host"] for r in result.ranks] == ["node1", "node2"]
    checks = by_check(evaluate(result, expected=2.5))
    assert checks["nccl_correctness"].status == "pass"  # validation: 1 and footer OK
    assert checks["nccl_busbw"].value == 2.47 and checks["nccl_busbw"].status == "pass"


def test_no_validation_warns():
    result = load("current_no_check.txt")
    assert result.validated is False
    assert all(r.out_of_place.wrong is None for r in result.rows)
    assert by_check(evaluate(result, expected=12.0))["nccl_correctness"].status == "warn"


def test_failure_lines_and_missing_footer():
    result = load("current_nccl_failure.txt")
    assert not result.complete
    assert result.failures[0].startswith("gpu2: Test NCCL failure common.cu:1296 'remote process exited")
    assert result.failures[1] == ".. gpu2 pid 739786: Test failure common.cu:1185"
    checks = by_check(evaluate(result, rc=3, expected=12.0))
    assert checks["nccl_exit"].message == "nccl-tests exited 3 (NCCL error)"
    assert checks["nccl_errors"].status == "fail" and checks["nccl_errors"].value == 2
    assert checks["nccl_complete"].code == "NCCL_TRUNCATED"


def test_mpirun_prefixes_and_socket_fallback():
    result = load("mpirun_prefixed_socket.txt")
    assert result.version == "2.17.4"
    assert [r.size for r in result.rows] == [268435456, 536870912, 1073741824]
    assert result.networks == ["Socket"]
    checks = by_check(evaluate(result, rc=0, expected=12.0, rdma_expected=True))
    assert checks["nccl_transport"].status == "fail"
    assert checks["nccl_transport"].code == "NCCL_SOCKET_FALLBACK"
    assert checks["nccl_busbw"].status == "fail"


def test_transport_unknown_without_debug_output():
    checks = by_check(evaluate(load("current_2node_roce_pass.txt"), expected=12.0, rdma_expected=True))
    assert checks["nccl_transport"].status == "unavailable"


def test_min_bw_footer_failed():
    result = load("current_min_bw_failed.txt")
    assert result.avg_ok is False
    assert by_check(evaluate(result, rc=7, expected=None))["nccl_min_bw"].status == "fail"


def test_no_expectation_is_unavailable_not_pass():
    busbw = by_check(evaluate(load("current_2node_roce_pass.txt"), rc=0))["nccl_busbw"]
    assert busbw.status == "unavailable"
    assert busbw.value == 11.69


def test_json_output():
    result = parse_json(json.loads((FIXTURES / "current_2node.json").read_text()))
    assert [r.size for r in result.rows] == [268435456, 1073741824]
    assert result.rows[1].best_busbw == 11.69
    assert (result.oob_count, result.oob_ok, result.avg_busbw, result.avg_ok) == (0, True, 11.6275, None)
    assert result.as_dict()["hosts"] == ["gpu1", "gpu2"]
    assert by_check(evaluate(result, rc=0, expected=12.0))["nccl_busbw"].status == "pass"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no nccl-tests column header"),
        ("hello world\nthis is not nccl\n", "no nccl-tests column header"),
        ("  1073741824  268435456  float  sum  -1  92012.3  11.67  11.67  0\n", "data row before the column header"),
        (
            "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
            "  1073741824  268435456  float  sum  -1  92012.3  11.67\n",
            "malformed data row",
        ),
    ],
)
def test_garbage_is_a_clear_error(text, message):
    with pytest.raises(NcclParseError, match=message):
        parse_text(text)


@pytest.mark.parametrize("data", [{}, {"results": [{"size": 1}]}, {"results": "x"}])
def test_garbage_json_is_a_clear_error(data):
    with pytest.raises(NcclParseError):
        parse_json(data)
