"""The lab's monitoring: Prometheus on mgmt1 scrapes every node and Ceph's manager, the Slurm
collector reports the nodes and a drain with its reason, and every Slurm and Ceph dashboard query
returns data (the node and GPU dashboards are queried in Molecule `monitoring`, which has GPUs)."""

import json
import shlex
from pathlib import Path

from helpers import on, query, wait_for

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "roles" / "monitoring" / "files" / "dashboards"
TARGETS = """
import json, urllib.request
active = json.load(urllib.request.urlopen("http://localhost:9090/api/v1/targets", timeout=10))["data"]["activeTargets"]
print(json.dumps(sorted([t["labels"]["job"], t["labels"]["instance"], t["health"]] for t in active)))
"""


def targets():
    return json.loads(on("mgmt1", f"python3 -c {shlex.quote(TARGETS)}"))


def test_prometheus_scrapes_every_node_and_ceph_s_manager():
    wanted = [
        ["ceph", "storage1", "up"],
        *(["node", name, "up"] for name in ("gpu1", "gpu2", "mgmt1", "storage1")),
        ["prometheus", "mgmt1", "up"],
    ]
    assert wait_for(lambda: targets() == wanted, 60), targets()

    def health():
        return [(r["metric"]["instance"], r["value"][1]) for r in query("ceph_health_status")["ceph_health_status"]]

    # HEALTH_OK (0); the fault suite just before may have left a scraped WARN for a scrape interval or two.
    assert wait_for(lambda: health() == [("storage1", "0")], 90), health()


def node_states(answer):
    return {r["metric"]["state"]: r["value"][1] for r in answer["gpulab_slurm_nodes"]}


def test_the_slurm_collector_reports_both_compute_nodes():
    # The collector samples every 30 s: one taken while the validation's smoke job held both nodes
    # says "allocated" until the next, so wait for the idle nodes rather than for any sample.
    def slurm():
        answer = query("gpulab_slurm_up", "gpulab_slurm_nodes")
        return answer if answer["gpulab_slurm_up"] and node_states(answer) == {"idle": "2"} else None

    answer = wait_for(slurm, 120)
    assert answer, query("gpulab_slurm_up", "gpulab_slurm_nodes")
    assert [r["value"][1] for r in answer["gpulab_slurm_up"]] == ["1"]
    assert node_states(answer) == {"idle": "2"}


def test_a_drained_node_shows_with_its_reason():
    on("mgmt1", "scontrol update nodename=gpu2 state=drain reason='lab: monitoring test'")
    try:
        drained = 'gpulab_slurm_node_drain{node="gpu2"} == 1'

        def reasons():
            return [r["metric"]["reason"] for r in query(drained)[drained]]

        # The collector runs now rather than at its timer's next turn (every 30 s; the timers' own test is
        # test_the_slurm_collector_reports_both_compute_nodes); Prometheus scrapes every 15 s, and an earlier
        # test's drain may show until then.
        on("mgmt1", "systemctl start gpulab-slurm-metrics.service")
        assert wait_for(lambda: reasons() == ["lab: monitoring test"], 90), reasons()
    finally:
        on("mgmt1", "scontrol update nodename=gpu2 state=resume")


def test_every_slurm_and_ceph_dashboard_query_returns_data():
    exprs = [
        target["expr"]
        for name in ("gpulab-slurm.json", "gpulab-ceph.json", "gpulab-nodes.json")
        for panel in json.loads((DASHBOARDS / name).read_text())["panels"]
        for target in panel["targets"]
    ]
    answers = query(*exprs)
    assert [expr for expr in exprs if not answers[expr]] == []
