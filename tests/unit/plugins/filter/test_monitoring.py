import re
from pathlib import Path

import yaml

from ansible_collections.gpulab.cluster.plugins.filter.monitoring import (
    collector_files,
    collector_timers,
    monitoring_problems,
    receiver_address,
)

GPU = {
    "name": "gpu",
    "title": "GPU",
    "interval": 15,
    "python": "/opt/m/bin/python3",
    "code": ["checks.py", "prom_text.py"],
}
SLURM = {
    "name": "slurm",
    "title": "Slurm",
    "interval": 30,
    "python": "/usr/bin/python3",
    "code": ["prom_text.py", "slurm.py"],
}


def test_each_collector_has_its_script_and_units_and_shared_code_is_written_once():
    files = collector_files([GPU, SLURM], "/opt/m/lib/gpulab", "/opt/m/lib/gpulab/mu", "/ctl/module_utils")
    assert [f["path"] for f in files] == [
        "/opt/m/lib/gpulab/mu/checks.py",
        "/opt/m/lib/gpulab/mu/prom_text.py",
        "/opt/m/lib/gpulab/mu/slurm.py",
        "/opt/m/lib/gpulab/gpulab_gpu_metrics.py",
        "/etc/systemd/system/gpulab-gpu-metrics.service",
        "/etc/systemd/system/gpulab-gpu-metrics.timer",
        "/opt/m/lib/gpulab/gpulab_slurm_metrics.py",
        "/etc/systemd/system/gpulab-slurm-metrics.service",
        "/etc/systemd/system/gpulab-slurm-metrics.timer",
    ]
    assert files[1] == {
        "path": "/opt/m/lib/gpulab/mu/prom_text.py",
        "src": "/ctl/module_utils/prom_text.py",
        "owner": "root",
        "group": "root",
        "mode": "0644",
    }
    assert files[3]["template"] == "gpulab_gpu_metrics.py.j2" and "vars" not in files[3]
    assert files[8]["template"] == "gpulab-metrics.timer.j2" and files[8]["vars"] == {"collector": SLURM}
    assert collector_files([], "/l", "/c", "/s") == []


def test_each_collector_timer_is_a_service_of_the_files_task_and_is_the_unit_it_writes():
    timers = collector_timers([GPU, SLURM])
    assert timers == [{"name": "gpulab-gpu-metrics.timer"}, {"name": "gpulab-slurm-metrics.timer"}]
    written = {f["path"] for f in collector_files([GPU, SLURM], "/l", "/c", "/s")}
    assert {f"/etc/systemd/system/{t['name']}" for t in timers} <= written


ROOT = Path(__file__).resolve().parents[4]
IMPORT = re.compile(
    r"^from ansible_collections\.gpulab\.cluster\.plugins\.module_utils(?:\.(\w+))? import \(?([\w, ]*)", re.M
)


def imported(text):
    """The module_utils files a Python text imports (either import form)."""
    names = set()
    for module, items in IMPORT.findall(text):
        names |= {f"{module}.py"} if module else {f"{item.strip()}.py" for item in items.split(",")}
    return names


def test_each_collector_copies_every_module_util_it_imports():
    # The role copies a hand-kept list of files next to each collector: one missing breaks it on the node only.
    table = yaml.safe_load((ROOT / "roles/monitoring/vars/main.yml").read_text())["__monitoring_collector_table"]
    listed = {row["collector"]["name"]: row["collector"]["code"] for row in table}
    assert set(listed) == {"gpu", "slurm", "ups"}
    for name, code in listed.items():
        needed = imported((ROOT / f"roles/monitoring/templates/gpulab_{name}_metrics.py.j2").read_text())
        todo = set(needed)
        while todo:
            more = imported((ROOT / "plugins/module_utils" / todo.pop()).read_text()) - needed
            needed |= more
            todo |= more
        assert needed == set(code), name


GOOD_SETTINGS = {
    "intervals": {"monitoring_gpu_interval": 15, "monitoring_slurm_interval": 30, "monitoring_ups_interval": 15},
    "durations": {"monitoring_scrape_interval": "15s", "monitoring_retention_time": "30d"},
    "ups_collector": True,
    "ups_target": "ups@mgmt1:3493",
    "scrape_jobs": [{"name": "dcgm", "port": 9400, "hosts": ["gpu1"]}],
    "ceph_hosts": ["mgmt1"],
    "alert_receiver": {"type": "email", "to": "ops@example.org", "smarthost": "mail.example.org:587"},
}


def test_good_monitoring_settings_have_no_problem():
    assert monitoring_problems(["mgmt1", "gpu1"], **GOOD_SETTINGS) == []
    assert monitoring_problems(["mgmt1", "gpu1"], **{**GOOD_SETTINGS, "alert_receiver": {}}) == []


def test_every_monitoring_problem_at_once_each_naming_its_variable():
    bad = {
        "intervals": {"monitoring_gpu_interval": 0, "monitoring_slurm_interval": 30, "monitoring_ups_interval": -1},
        "durations": {"monitoring_scrape_interval": "15s", "monitoring_retention_time": "30days", "x": "1h30m"},
        "ups_collector": True,
        "ups_target": "ups",
        "scrape_jobs": [{"name": "dcgm", "port": 9400, "hosts": ["gpu1", "gpu9"]}, {"name": "b", "hosts": ["gpu9"]}],
        "ceph_hosts": ["mgmt1", "ceph9"],
        "alert_receiver": {"type": "email", "to": "ops@example.org"},
    }
    assert monitoring_problems(["mgmt1", "gpu1"], **bad) == [
        "monitoring_gpu_interval must be 1 or more seconds, got 0",
        "monitoring_ups_interval must be 1 or more seconds, got -1",
        "monitoring_ups_target must be UPS@HOST[:PORT], got 'ups'",
        "monitoring_retention_time: not a Prometheus duration such as 15s, 5m or 30d",
        "monitoring_scrape_jobs names hosts that are not in the inventory: gpu9",
        "monitoring_ceph_hosts names hosts that are not in the inventory: ceph9",
        "monitoring_alert_receiver has no address: a webhook needs its url, e-mail its to and smarthost",
    ]
    # Without the UPS collector its target is not read; a receiver without a type says so.
    assert monitoring_problems(
        ["mgmt1", "gpu1"], **{**GOOD_SETTINGS, "ups_collector": False, "ups_target": "", "alert_receiver": {"url": "x"}}
    ) == ["monitoring_alert_receiver needs a type: webhook or email"]
    assert receiver_address({"type": "webhook", "url": "http://x"}) == "http://x"


MODULE_UTILS = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"
IMPORTED = re.compile(
    r"from ansible_collections\.gpulab\.cluster\.plugins\.module_utils(?:\.(\w+))? import \(?([\w, ]*)"
)


def module_utils_imported(text):
    """The module_utils files a source imports (`from ...module_utils import a, b` or `...module_utils.a import x`)."""
    names = set()
    for module, imported in IMPORTED.findall(text):
        names |= {module} if module else {name.strip() for name in imported.split(",")}
    return {f"{name}.py" for name in names}


def test_each_collector_is_given_every_module_utils_it_imports_and_they_import():
    """A collector runs on the node with only its `code` list copied beside it: one missing fails at import there."""
    roles = Path(__file__).resolve().parents[4] / "roles" / "monitoring"
    table = yaml.safe_load((roles / "vars" / "main.yml").read_text())["__monitoring_collector_table"]
    for entry in table:
        collector = entry["collector"]
        needed, todo = (
            set(),
            module_utils_imported((roles / "templates" / f"gpulab_{collector['name']}_metrics.py.j2").read_text()),
        )
        while todo:
            name = todo.pop()
            needed.add(name)
            todo |= module_utils_imported((MODULE_UTILS / name).read_text()) - needed
        assert sorted(needed) == sorted(collector["code"]), collector["name"]
