"""Ceph's health and OSD map read from what `ceph ... -f json` printed (Ceph 16.2.15, Debian 12)."""

import json
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import ceph

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ceph"


def read(name):
    return (FIXTURES / name).read_text()


def test_a_healthy_cluster_passes():
    assert ceph.health(read("health-ok.json")).as_dict()["status"] == "pass"
    osds = ceph.osds(read("osd-stat-up.json"), expected=2).as_dict()
    assert (osds["status"], osds["value"], osds["threshold"], osds["message"]) == ("pass", 2, 2, "all 2 OSDs up and in")


def test_an_osd_down_warns_in_cephs_words_and_fails_the_osd_count():
    warn = ceph.health(read("health-osd-down.json")).as_dict()
    assert (warn["status"], warn["code"]) == ("warn", "CEPH_HEALTH_WARN")
    assert warn["message"].startswith("HEALTH_WARN: ")
    assert "OSD_DOWN: 1 osds down" in warn["message"]
    down = ceph.osds(read("osd-stat-one-down.json"), expected=2).as_dict()
    assert (down["status"], down["code"], down["value"], down["threshold"]) == ("fail", "CEPH_OSD_DOWN", 1, 2)
    assert down["message"].startswith("1 of 2 OSDs up, 2 in:")


def test_fewer_osds_than_declared_fail_and_errors_fail():
    missing = ceph.osds(read("osd-stat-up.json"), expected=3).as_dict()
    assert (missing["status"], missing["code"]) == ("fail", "CEPH_OSD_MISSING")
    assert missing["message"].startswith("2 OSDs in the cluster, 3 devices declared (ceph_osd_devices)")
    err = '{"status":"HEALTH_ERR","checks":{"PG_AVAILABILITY":{"severity":"HEALTH_ERR","summary":{"message":"x"}}}}'
    assert ceph.health(err).as_dict()["code"] == "CEPH_HEALTH_ERR"


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "ceph health detail is not JSON"),
        ("[]", "ceph health detail is not a JSON object"),
        ('{"status": "HEALTH_UNKNOWN"}', "ceph health detail gave no known status: 'HEALTH_UNKNOWN'"),
    ],
)
def test_other_output_is_refused(text, message):
    with pytest.raises(ceph.CephParseError, match=message):
        ceph.health(text)
    with pytest.raises(ceph.CephParseError, match="lacks num_osds"):
        ceph.osds('{"epoch": 3}')


def test_the_cluster_as_the_role_reads_it():
    state = ceph.cluster(read("status-ok.json"), read("fs-ls.json"))
    assert state == {
        "quorum": ["storage1"],
        "health": "HEALTH_OK",
        "checks": {},
        "mgr_modules": ["iostat", "nfs", "prometheus", "restful"],
        "fs": ["cephfs"],
    }


def test_the_clusters_checks_are_named_with_their_messages():
    status = json.loads(read("status-ok.json"))
    status["health"] = json.loads(read("health-osd-down.json"))
    state = ceph.cluster(json.dumps(status), "[]")
    assert (state["health"], state["fs"]) == ("HEALTH_WARN", [])
    assert state["checks"]["OSD_DOWN"] == "1 osds down"


@pytest.mark.parametrize(
    "status, listed, message",
    [
        ("", "[]", "ceph status is not JSON"),
        ('{"health": {"status": "HEALTH_OK"}}', "[]", "ceph status lacks quorum_names or health.status"),
        (None, "{}", "ceph fs ls is not a list of file systems with names"),
        (None, "[{}]", "ceph fs ls is not a list of file systems with names"),
        (None, "no", "ceph fs ls is not JSON"),
    ],
)
def test_other_cluster_output_is_refused(status, listed, message):
    with pytest.raises(ceph.CephParseError, match=message):
        ceph.cluster(status if status is not None else read("status-ok.json"), listed)
