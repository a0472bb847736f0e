"""Prometheus and Alertmanager on the management node: every node scraped, gpulab's rules loaded,
every dashboard query answered, and alerts reaching a webhook receiver that runs on mon-mgmt: a
stand-in GPU made hot, and a node that stops answering (its container paused)."""

import base64
import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from polling import wait_for

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
ROLE = ROOT / "roles" / "monitoring"
NODES = {"mon-mgmt", "mon-gpu1", "mon-gpu2"}
RECEIVED = "/root/webhook.jsonl"
# The receiver: every POST Alertmanager sends, one JSON line each: its Authorization header and body.
WEBHOOK = """
import http.server, json
class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with open("/root/webhook.jsonl", "a") as out:
            out.write(json.dumps({"authorization": self.headers.get("Authorization"), "body": body}) + "\\n")
        self.send_response(200)
        self.end_headers()
http.server.HTTPServer(("127.0.0.1", 9199), Receiver).serve_forever()
"""


def api(mgmt, path):
    fetch = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())"
    return json.loads(mgmt.check_output(f"python3 -c {shlex.quote(fetch)} http://localhost:9090{path}"))


def posts(mgmt):
    """Every POST the webhook got: {"authorization": header, "body": Alertmanager's JSON}."""
    text = mgmt.check_output(f"cat {RECEIVED} 2>/dev/null || true")
    return [json.loads(line) for line in text.splitlines()]


def received(mgmt):
    """Every alert the webhook got: (status, labels)."""
    return [(alert["status"], alert["labels"]) for post in posts(mgmt) for alert in post["body"]["alerts"]]


@pytest.fixture(scope="module")
def mgmt(scenario_host):
    return scenario_host("mon-mgmt")


@pytest.fixture(scope="module")
def incident(mgmt, stand_in):
    """From here on: the webhook receiver runs, the stand-in's A100 is hot and mon-gpu2 is paused (hung)."""
    # Left running afterwards, so that Alertmanager can deliver the resolved alerts too: otherwise
    # a second run of these tests would find them firing again and not yet sent as resolved.
    mgmt.check_output(
        f"rm -f {RECEIVED} && (systemctl -q is-active gpulab-test-webhook"
        f" || systemd-run --unit gpulab-test-webhook python3 -c {shlex.quote(WEBHOOK)})"
    )
    _gpu1, edit = stand_in
    edit(lambda state: state["gpus"][1].update(temperature=93))
    subprocess.run(["docker", "pause", "mon-gpu2"], check=True)
    started = time.monotonic()
    yield started
    subprocess.run(["docker", "unpause", "mon-gpu2"], check=True)


def test_prometheus_scrapes_node_exporter_on_every_node(mgmt, prometheus):
    def targets():
        active = api(mgmt, "/api/v1/targets")["data"]["activeTargets"]
        return {t["labels"]["instance"]: t["health"] for t in active if t["labels"]["job"] == "node"}

    every_node_up = dict.fromkeys(NODES, "up")
    assert wait_for(lambda: targets() == every_node_up, 30), targets()
    # up == 1 as the alert rules see it, and nothing else: Prometheus never ran with Debian's
    # example config (which scrapes localhost:9100), so no such series lingers.
    answer = prometheus("up")["up"]
    wanted = [("node", "mon-gpu1", "1"), ("node", "mon-gpu2", "1"), ("node", "mon-mgmt", "1")]
    wanted.append(("prometheus", "mon-mgmt", "1"))
    assert sorted((r["metric"]["job"], r["metric"]["instance"], r["value"][1]) for r in answer) == wanted


def test_prometheus_evaluates_every_gpulab_rule(mgmt):
    groups = yaml.safe_load((ROLE / "files" / "gpulab.rules.yml").read_text())["groups"]
    wanted = {rule["alert"] for group in groups for rule in group["rules"]}
    loaded = api(mgmt, "/api/v1/rules")["data"]["groups"]
    assert {rule["name"] for group in loaded for rule in group["rules"]} == wanted
    assert all(rule["health"] == "ok" for group in loaded for rule in group["rules"]), loaded


def test_alertmanager_is_prometheus_s_alertmanager(mgmt):
    active = api(mgmt, "/api/v1/alertmanagers")["data"]["activeAlertmanagers"]
    assert [am["url"] for am in active] == ["http://localhost:9093/api/v2/alerts"]


# The Slurm and Ceph dashboards are queried in the lab (tests/lab), which runs both.
DASHBOARDS = ("gpulab-nodes.json", "gpulab-gpus.json")


def dashboard_queries():
    for path in (ROLE / "files" / "dashboards" / name for name in DASHBOARDS):
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel["targets"]:
                yield path.name, panel["title"], target["expr"]


def test_the_dashboards_are_installed(mgmt):
    for path in (ROLE / "files" / "dashboards").glob("*.json"):
        assert json.loads(mgmt.file(f"/usr/share/gpulab/dashboards/{path.name}").content_string) == json.loads(
            path.read_text()
        )


def test_every_dashboard_query_returns_data(prometheus, stand_in):
    queries = list(dashboard_queries())
    assert len(queries) >= 15

    def empty():
        answers = prometheus(*(query_expr for _name, _title, query_expr in queries))
        return [(name, title, expr) for name, title, expr in queries if not answers[expr]]

    # Until the stand-in's GPUs have been scraped (a few seconds after the fixture set them up).
    assert wait_for(lambda: not empty(), 30), empty()


def test_a_hot_gpu_alert_reaches_the_webhook(mgmt, incident):
    # GpuTooHot holds for 2 minutes before it fires; evaluation and delivery add seconds.
    def hot():
        return [
            labels for status, labels in received(mgmt) if status == "firing" and labels["alertname"] == "GpuTooHot"
        ]

    alerts = wait_for(hot, 200, step=5)
    assert alerts, received(mgmt)
    assert time.monotonic() - incident >= 120
    assert {(a["instance"], a["gpu"], a["severity"]) for a in alerts} == {("mon-gpu1", "1", "warning")}


def test_a_node_that_stops_answering_fires_node_down(mgmt, incident):
    def down():
        return [labels for status, labels in received(mgmt) if status == "firing" and labels["alertname"] == "NodeDown"]

    alerts = wait_for(down, 120, step=5)
    assert alerts, received(mgmt)
    assert {a["instance"] for a in alerts} == {"mon-gpu2"}


def test_alertmanager_signs_in_with_the_receiver_s_password(mgmt, incident):
    # The inventory's username and password (molecule.yml), read by Alertmanager from its file.
    wanted = "Basic " + base64.b64encode(b"alertmanager:lab-webhook-secret").decode()
    assert {post["authorization"] for post in posts(mgmt)} == {wanted}
    assert mgmt.file("/etc/prometheus/gpulab-alert-password").mode == 0o640
    assert "lab-webhook-secret" not in mgmt.file("/etc/prometheus/alertmanager.yml").content_string
