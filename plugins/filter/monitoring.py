"""The monitoring role's settings checked before anything is installed, and its collector files, listed
for the files module: one task writes them all."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.gpulab.cluster.plugins.filter.host_facts import missing

UPS_TARGET = re.compile(r"^[A-Za-z0-9_-]+@[^@:\s]+(:[0-9]+)?$")
DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")


def receiver_address(receiver: Mapping[str, Any]) -> str:
    """What an alert receiver is sent to: a webhook's url, or e-mail's recipient where a smarthost sends it."""
    if receiver.get("type") == "webhook":
        return receiver.get("url") or ""
    return (receiver.get("to") or "") if receiver.get("smarthost") else ""


def monitoring_problems(
    inventory: list[str],
    *,
    intervals: Mapping[str, Any],
    durations: Mapping[str, Any],
    ups_collector: bool,
    ups_target: str,
    scrape_jobs: list[Mapping[str, Any]],
    ceph_hosts: list[str],
    alert_receiver: Mapping[str, Any],
) -> list[str]:
    """What the argument spec cannot check of the monitoring_* settings, each problem naming its variable.

    intervals: collector intervals in seconds by variable; durations: Prometheus durations by variable;
    inventory: every host (groups['all'])."""
    problems = [f"{name} must be 1 or more seconds, got {value}" for name, value in intervals.items() if int(value) < 1]
    if ups_collector and not UPS_TARGET.match(ups_target):
        problems.append(f"monitoring_ups_target must be UPS@HOST[:PORT], got '{ups_target}'")
    bad = [name for name, value in durations.items() if not DURATION.match(str(value))]
    if bad:
        problems.append(f"{', '.join(bad)}: not a Prometheus duration such as 15s, 5m or 30d")
    unknown = missing([host for job in scrape_jobs for host in job.get("hosts", [])], inventory)
    if unknown:
        problems.append(f"monitoring_scrape_jobs names hosts that are not in the inventory: {', '.join(unknown)}")
    unknown = missing(ceph_hosts, inventory)
    if unknown:
        problems.append(f"monitoring_ceph_hosts names hosts that are not in the inventory: {', '.join(unknown)}")
    if alert_receiver and "type" not in alert_receiver:
        problems.append("monitoring_alert_receiver needs a type: webhook or email")
    if alert_receiver.get("type") and not receiver_address(alert_receiver):
        problems.append(
            "monitoring_alert_receiver has no address: a webhook needs its url, e-mail its to and smarthost"
        )
    return problems


OWNED = {"owner": "root", "group": "root", "mode": "0644"}


def collector_files(
    collectors: list[Mapping[str, Any]], lib_dir: str, code_dir: str, code_src: str
) -> list[dict[str, Any]]:
    """Every collector's script, systemd service and timer, and the parsing code they import (each file once).

    collectors: {name, code: [module_utils file names], ...}; lib_dir: where the scripts go; code_dir: where
    their module_utils go; code_src: the collection's plugins/module_utils on the controller."""
    code = list(dict.fromkeys(name for c in collectors for name in c["code"]))
    files = [{"path": f"{code_dir}/{name}", "src": f"{code_src}/{name}", **OWNED} for name in code]
    for c in collectors:
        files.append(
            {
                "path": f"{lib_dir}/gpulab_{c['name']}_metrics.py",
                "template": f"gpulab_{c['name']}_metrics.py.j2",
                **OWNED,
            }
        )
        files += [
            {
                "path": f"/etc/systemd/system/gpulab-{c['name']}-metrics.{kind}",
                "template": f"gpulab-metrics.{kind}.j2",
                "vars": {"collector": dict(c)},
                **OWNED,
            }
            for kind in ("service", "timer")
        ]
    return files


def collector_timers(collectors: list[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The timer of every collector, as the files module's services: each is enabled and started."""
    return [{"name": f"gpulab-{c['name']}-metrics.timer"} for c in collectors]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "collector_files": collector_files,
            "collector_timers": collector_timers,
            "monitoring_problems": monitoring_problems,
            "receiver_address": receiver_address,
        }
