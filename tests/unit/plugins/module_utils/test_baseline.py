"""The doctor's comparison with a baseline, on reports built from recorded output: the H200's CSV query,
two-node nccl-tests runs (one healthy, one with a slow link) and a two-node gloo benchmark."""

import json
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import baseline as bl
from ansible_collections.gpulab.cluster.plugins.module_utils import ceph, collective, nccl_tests, report
from ansible_collections.gpulab.cluster.plugins.module_utils import nvidia_smi as smi

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BASELINE_DATE = "2026-11-20T08:00:00+00:00"
VERSIONS = {"driver": "580.159.04", "nccl": "2.28.3", "kernel": "6.8.0-49-generic"}


def gpu_result(temperature=33.0, ecc_corrected=0, ecc_uncorrected=0):
    gpus = smi.parse_query_csv((FIXTURES / "nvidia_smi" / "query_h200_580.csv").read_text())
    gpus[0].update(temperature=temperature, ecc_corrected_volatile=ecc_corrected)
    gpus[0].update(ecc_uncorrected_volatile=ecc_uncorrected, ecc_supported=True)
    checks = smi.evaluate(gpus, source="nvidia-smi csv", expected_count=1, xids=[])
    return {"checks": [c.as_dict() for c in checks]}


# One GPU as the benchmark worker reads it under load (tests/unit/test_bench_under_load.py).
LOADED = {
    "index": 0, "samples": 4, "temperature_max": 66, "sm_clock_min": 1965, "sm_clock_max": 1980,
    "pcie_gen_min": 5, "pcie_gen_max": 5, "pcie_width_min": 16, "event_mask": 0x4,
}  # fmt: skip


def run(
    nccl="current_2node_roce_pass.txt",
    versions=None,
    generated="2026-12-04T09:00:00+00:00",
    baseline=None,
    osd_stat=None,
    load=None,
    **gpu,
):
    """A two-node cluster's report: each node's GPU, nccl-tests across both, the gloo benchmark; with osd_stat
    (a recorded `ceph osd stat`), Ceph's OSDs."""
    across = nccl_tests.parse_text((FIXTURES / "nccl" / nccl).read_text())
    bench = collective.parse_result((FIXTURES / "collective" / "gloo-2nodes-cpu.json").read_text())
    if load:  # gpu1's GPU under the benchmark's load, as the worker reports it on GPUs
        bench["under_load"] = {"gpu1": {"host": "gpu1", "error": None, "gpus": [{**LOADED, **load}]}}
    nodes = {
        host: {"reached": True, "versions": dict((versions or {}).get(host, VERSIONS)), "gpu": gpu_result(**gpu)}
        for host in ("gpu1", "gpu2")
    }
    cluster = {
        "nccl_across": {
            "checks": [c.as_dict() for c in nccl_tests.evaluate(across, rc=0, expected=12.0)],
            "result": across.as_dict(),
        },
        "collective": {"checks": [c.as_dict() for c in collective.evaluate(bench)], "result": bench},
    }
    if osd_stat:
        cluster["ceph"] = {"checks": [ceph.osds((FIXTURES / "ceph" / osd_stat).read_text()).as_dict()]}
    return report.build(nodes, cluster, generated, baseline=baseline)


def stored():
    """The baseline as the doctor reads it back: report.json after a JSON round trip."""
    return json.loads(json.dumps(run(generated=BASELINE_DATE)))


def by_check(data):
    return {c["check"]: c for c in data["cluster"]["baseline"]["checks"]}


def test_an_unchanged_cluster_passes_with_every_metric_compared():
    data = run(baseline=report.Baseline("reports/baseline.json", stored()))
    changed = data["changed_since"]
    assert changed["since"] == BASELINE_DATE and changed["regressions"] == [] and changed["changes"] == []
    # Per node: temperature, both ECC counts, PCIe width, XIDs; the cluster: nccl busbw, torch busbw and
    # the scaling efficiency (this recorded benchmark predates the step time and weak scaling records).
    compared = sorted(key[0] + " " + key[2] for key in bl.metrics(data))
    assert compared == [
        "cluster collective.busbw",
        "cluster nccl_busbw",
        "cluster scaling_efficiency",
        *[
            f"{host} {check}"
            for host in ("gpu1", "gpu2")
            for check in ("gpu0.ecc_corrected", "gpu0.ecc_uncorrected", "gpu0.pcie_width", "gpu0.temperature", "xid")
        ],
    ]
    assert changed["compared"] == len(compared) == 13
    assert by_check(data)["baseline"]["status"] == "pass"
    assert data["cluster"]["baseline"]["status"] == "pass"


def test_busbw_that_fell_past_its_tolerance_fails_naming_old_new_and_tolerance():
    data = run(nccl="current_2node_slow.txt", baseline=report.Baseline("b.json", stored()))
    regression = by_check(data)["cluster nccl_busbw"]
    assert (regression["status"], regression["code"]) == ("fail", "BASELINE_REGRESSION")
    assert (regression["baseline"], regression["value"], regression["tolerance"], regression["unit"]) == (
        11.69,
        7.92,
        0.1,
        "GB/s",
    )
    assert regression["threshold"] == pytest.approx(10.521)
    assert regression["message"] == "nccl_busbw fell from 11.69 to 7.92 GB/s (-32.2%); tolerance 10% (bandwidth)"
    assert data["cluster"]["baseline"]["status"] == "fail" and data["verdict"] == "fail"
    assert ("cluster", "baseline", "cluster nccl_busbw") in {
        (f["node"], f["section"], f["check"]) for f in data["failures"]
    }
    # Inside a tolerance the operator widened, the same run passes the comparison.
    wide = run(nccl="current_2node_slow.txt", baseline=report.Baseline("b.json", stored(), {"bandwidth": "0.4"}))
    assert wide["changed_since"]["regressions"] == [] and wide["cluster"]["baseline"]["status"] == "pass"


@pytest.mark.parametrize(
    ("gpu", "failing"),
    [
        ({"temperature": 37.0}, []),  # 4 C hotter: inside 5 C
        ({"temperature": 42.0}, ["gpu0.temperature"]),  # 9 C hotter
        ({"ecc_corrected": 500}, []),
        ({"ecc_corrected": 4000}, ["gpu0.ecc_corrected"]),  # 4,000 new single-bit errors
        ({"ecc_uncorrected": 1}, ["gpu0.ecc_uncorrected"]),  # any new double-bit error
    ],
)
def test_gpu_metrics_against_their_tolerances(gpu, failing):
    data = run(baseline=report.Baseline("b.json", stored()), **gpu)
    found = sorted({r["check"].split(" ", 1)[1] for r in data["changed_since"]["regressions"]})
    assert found == failing
    if failing:
        regression = data["changed_since"]["regressions"][0]
        assert regression["check"] == f"gpu1 {failing[0]}" and regression["baseline"] != regression["value"]


@pytest.mark.parametrize(
    ("load", "failing"),
    [
        ({}, []),
        ({"sm_clock_min": 1800}, []),  # 8.4 % lower: inside 10 %
        ({"sm_clock_min": 1700}, ["load.gpu1.gpu0.sm_clock"]),  # 13.5 % lower
        ({"temperature_max": 72}, ["load.gpu1.gpu0.temperature"]),  # 6 C hotter under load
        ({"pcie_gen_min": 4}, ["load.gpu1.gpu0.pcie_gen"]),
        ({"pcie_width_min": 8}, ["load.gpu1.gpu0.pcie_width"]),
    ],
)
def test_the_gpus_under_load_against_their_tolerances(load, failing):
    old = json.loads(json.dumps(run(generated=BASELINE_DATE, load={"samples": 4})))
    data = run(baseline=report.Baseline("b.json", old), load={**load, "samples": 3})
    assert sorted(r["check"].split(" ", 1)[1] for r in data["changed_since"]["regressions"]) == failing
    compared = {key[2] for key in bl.metrics(data) if key[2].startswith("load.")}
    assert compared == {f"load.gpu1.gpu0.{m}" for m in ("temperature", "sm_clock", "pcie_gen", "pcie_width")}


def test_a_version_that_moved_on_one_node_warns():
    moved = {"gpu1": VERSIONS, "gpu2": {**VERSIONS, "nccl": "2.29.1"}}
    data = run(versions=moved, baseline=report.Baseline("b.json", stored()))
    change = by_check(data)["gpu2 version.nccl"]
    assert (change["status"], change["code"], change["baseline"], change["value"]) == (
        "warn",
        "BASELINE_VERSION_CHANGED",
        "2.28.3",
        "2.29.1",
    )
    assert [c["check"] for c in data["changed_since"]["changes"]] == ["gpu2 version.nccl"]


def test_a_gpu_flashed_with_another_vbios_since_the_baseline_warns():
    flashed = {"gpu1": VERSIONS, "gpu2": {**VERSIONS, "vbios": "96.00.A5.00.1B"}}
    old = stored()
    old["versions"]["gpu2"] = {**VERSIONS, "vbios": "96.00.A5.00.1A"}
    data = run(versions=flashed, baseline=report.Baseline("b.json", old))
    change = by_check(data)["gpu2 version.vbios"]
    assert (change["code"], change["baseline"], change["value"]) == (
        "BASELINE_VERSION_CHANGED",
        "96.00.A5.00.1A",
        "96.00.A5.00.1B",
    )


def test_a_metric_the_baseline_had_and_this_run_could_not_measure_warns():
    old = stored()
    checks = old["cluster"]["nccl_across"]["checks"]
    new = run(baseline=report.Baseline("b.json", old))
    assert new["changed_since"]["changes"] == []
    for check in checks:  # the baseline measured more than this run: a run with no value now
        if check["check"] == "nccl_busbw":
            data_new = json.loads(json.dumps(new))
            data_new["cluster"]["nccl_across"]["checks"] = [
                {**check, "value": None, "status": "unavailable", "message": "nccl-tests not found"}
            ]
            result = bl.compare(old, data_new)
            assert [(c["check"], c["status"], c["code"]) for c in result["changes"]] == [
                ("cluster nccl_busbw", "warn", "BASELINE_NOT_MEASURED")
            ]


def test_no_baseline_yet_says_so_and_fails_nothing():
    data = run(baseline=report.Baseline("reports/baseline.json", None))
    record = by_check(data)["baseline"]
    assert (record["status"], record["code"]) == ("unavailable", "BASELINE_MISSING")
    assert "doctor_accept=true" in record["message"]
    assert data["cluster"]["baseline"]["status"] == "unavailable"
    assert data["verdict"] == run()["verdict"]  # the recorded benchmark's 46 % scaling fails either way
    assert "no baseline at reports/baseline.json yet" in report.render_html(data)


def test_the_page_opens_with_what_changed_and_draws_the_baseline_beside_today():
    data = run(nccl="current_2node_slow.txt", baseline=report.Baseline("reports/baseline.json", stored()))
    page = report.render_html(data)
    assert page.index(f"Changed since {BASELINE_DATE}") < page.index("What failed")
    assert "data-regressions='1'" in page
    assert "<td class='old'>11.69 GB/s</td><td class='new'>7.92 GB/s</td>" in page
    assert "nccl-tests all_reduce across gpu1, gpu2, baseline" in page and "across gpu1, gpu2, now" in page


def test_a_baseline_that_is_no_report_or_from_another_cluster_is_refused():
    today = run()
    assert bl.baseline_problem({"verdict": "pass"}, today, "b.json") == (
        "baseline b.json is not a gpulab report (it lacks generated, verdict, nodes, cluster)"
    )
    other = {**stored(), "nodes": {"node7": {}, "node8": {}}}
    assert bl.baseline_problem(other, today, "b.json") == (
        "baseline b.json is from another cluster: its nodes are node7, node8, this run's gpu1, gpu2"
    )
    assert bl.baseline_problem(stored(), today, "b.json") is None


def test_tolerances_that_are_not_numbers_are_refused_naming_them():
    assert bl.tolerance_problems({"bandwidth": "fast", "speed": 1, "time": -0.1, "counters": True}, "t") == [
        "t.bandwidth must be a number of at least 0, got 'fast'",
        "t.speed is no metric family; use one of bandwidth, time, efficiency, temperature, ecc_corrected, "
        "counters, pcie_width, pcie_gen, clocks, ceph_osds",
        "t.time must be a number of at least 0, got -0.1",
        "t.counters must be a number of at least 0, got True",
    ]
    assert bl.tolerance_problems({"bandwidth": "0.2", "temperature": 8}, "t") == []
    assert bl.tolerance_problems([0.1], "t")[0].startswith("t must be a mapping")


def test_iperf_per_pair_and_the_link_speed_are_bandwidth():
    """The network section's records as net_bandwidth writes them: TCP per peer and the NIC's speed."""

    def report(gbps_to_gpu2, link_gbps):
        checks = [
            {"check": "bandwidth.gpu2", "status": "pass", "message": "TCP", "value": gbps_to_gpu2, "unit": "Gbit/s"},
            {"check": "mtu.gpu2", "status": "pass", "message": "MTU", "value": 9000, "unit": "bytes"},
            {"check": "link_speed", "status": "pass", "message": "speed", "value": link_gbps, "unit": "Gbit/s"},
        ]
        return {
            "generated": BASELINE_DATE,
            "nodes": {"gpu1": {"sections": {"network": {"checks": checks}}}},
            "cluster": {},
        }

    assert [r["check"] for r in bl.compare(report(92.1, 100), report(88.0, 100))["regressions"]] == []  # -4.5 %
    fell = bl.compare(report(92.1, 100), report(61.0, 25))["regressions"]
    assert [(r["check"], r["baseline"], r["value"]) for r in fell] == [
        ("gpu1 bandwidth.gpu2", 92.1, 61.0),
        ("gpu1 link_speed", 100.0, 25.0),
    ]


def test_an_osd_fewer_than_the_baseline_had_is_a_regression():
    good = json.loads(json.dumps(run(generated=BASELINE_DATE, osd_stat="osd-stat-up.json")))
    data = run(osd_stat="osd-stat-one-down.json", baseline=report.Baseline("b.json", good))
    regression = by_check(data)["cluster ceph.osds"]
    assert (regression["status"], regression["baseline"], regression["value"]) == ("fail", 2, 1)
    assert regression["message"].startswith("ceph.osds fell from 2 to 1 OSDs")
