"""What changed since the cluster's last good run: a report compared with a stored baseline report.

Pure functions. Each numeric check record of a report (per node and section, and the cluster's) is a
metric; `RULES` says, by the check's name and unit, which family it belongs to, which way is better and
whether its tolerance is relative or absolute. A metric that moved the wrong way by more than its
family's tolerance is a regression (fail); a version that changed is a warning (deliberate upgrades
are accepted by recording a new baseline); the rest pass as one record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import as_number

# Family -> default tolerance: relative (a share of the baseline value) or absolute (in the metric's unit).
TOLERANCES = {
    "bandwidth": 0.10,  # relative: busbw (nccl-tests, torch), iperf3 per pair, the NIC's link speed
    "time": 0.15,  # relative: DDP step time, the training smoke's time to target
    "efficiency": 0.05,  # absolute: strong and weak scaling efficiency
    "temperature": 5.0,  # absolute, degrees C
    "ecc_corrected": 1000.0,  # absolute: new correctable ECC errors since the baseline
    "counters": 0.0,  # absolute: new uncorrectable ECC, remapped rows, retired pages, XIDs, bus drops
    "pcie_width": 0.0,  # absolute: lanes lost
    "pcie_gen": 0.0,  # absolute: a lower PCIe generation under load
    "clocks": 0.10,  # relative: the lowest SM clock under the benchmark's load
    "ceph_osds": 0.0,  # absolute: Ceph OSDs up, lost
}


@dataclass(frozen=True)
class Rule:
    family: str
    pattern: str  # on the check name
    higher_is_better: bool
    relative: bool
    units: tuple[str, ...] = ()  # when set, the record's unit must be one of these


RULES = (
    Rule("bandwidth", r"busbw$|^bandwidth\.|^link_speed$", True, True, ("GB/s", "Gbit/s")),
    Rule("time", r"step_time$|^training_smoke\.", False, True, ("ms", "s")),
    Rule("efficiency", r"^scaling_(efficiency|weak)$", True, False),
    Rule("temperature", r"\.temperature$", False, False),
    Rule("ecc_corrected", r"\.ecc_corrected$", False, False),
    Rule("counters", r"\.(ecc_uncorrected|row_remap|retired_pages)$|^xid$|^gpu_bus$", False, False),
    Rule("pcie_width", r"\.pcie_width$", True, False),
    Rule("pcie_gen", r"\.pcie_gen$", True, False),
    Rule("clocks", r"\.sm_clock$", True, True, ("MHz",)),
    Rule("ceph_osds", r"^ceph\.osds$", True, False),
)
# Keys every gpulab report has (report.build).
REPORT_KEYS = ("generated", "verdict", "nodes", "cluster")


def tolerance_problems(tolerances: Any, name: str) -> list[str]:
    """What is wrong with tolerance overrides {family: number >= 0}, each problem naming name.<family>."""
    if not isinstance(tolerances, dict):
        return [f"{name} must be a mapping of family to tolerance ({', '.join(TOLERANCES)}), got {tolerances!r}"]
    problems = []
    for family, value in tolerances.items():
        if family not in TOLERANCES:
            problems.append(f"{name}.{family} is no metric family; use one of {', '.join(TOLERANCES)}")
        elif (number := as_number(value)) is None or number < 0:
            problems.append(f"{name}.{family} must be a number of at least 0, got {value!r}")
    return problems


def baseline_problem(baseline: Any, report: dict[str, Any], path: str) -> str | None:
    """Why a stored report cannot be this cluster's baseline; None when it can."""
    if not isinstance(baseline, dict) or any(key not in baseline for key in REPORT_KEYS):
        return f"baseline {path} is not a gpulab report (it lacks {', '.join(REPORT_KEYS)})"
    old, new = set(baseline["nodes"]), set(report["nodes"])
    if not old & new:
        return (
            f"baseline {path} is from another cluster: its nodes are {', '.join(sorted(old)) or 'none'}, "
            f"this run's {', '.join(sorted(new))}"
        )
    return None


def rule_for(check: dict[str, Any]) -> Rule | None:
    for rule in RULES:
        if re.search(rule.pattern, check["check"]) and (not rule.units or check.get("unit") in rule.units):
            return rule
    return None


def _number(value: Any) -> float | None:
    return None if isinstance(value, bool) or not isinstance(value, (int, float)) else float(value)


def metrics(report: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(where, section, check) -> the record, for every record a rule covers; where is a node or "cluster"."""
    places = [(host, node["sections"]) for host, node in report["nodes"].items()]
    places.append(("cluster", report["cluster"]))
    return {
        (where, name, check["check"]): check
        for where, sections in places
        for name, sec in sections.items()
        if name != "baseline"
        for check in sec.get("checks") or []
        if rule_for(check)
    }


def _limit(old: float, rule: Rule, tolerance: float) -> float:
    """The worst value still within tolerance of the baseline's."""
    step = abs(old) * tolerance if rule.relative else tolerance
    return old - step if rule.higher_is_better else old + step


def _describe(old: float, new: float, unit: str | None, rule: Rule, tolerance: float) -> str:
    unit = f" {unit}" if unit else ""
    moved = "fell" if new < old else "rose"
    change = f" ({(new - old) / old:+.1%})" if rule.relative and old else ""
    allowed = f"{tolerance:.0%}" if rule.relative else f"{tolerance:g}{unit}"
    return f"{moved} from {old:g} to {new:g}{unit}{change}; tolerance {allowed} ({rule.family})"


def compare(
    baseline: dict[str, Any], report: dict[str, Any], tolerances: dict[str, float] | None = None
) -> dict[str, Any]:
    """The report's baseline section: {checks, since, regressions, changes, compared, improved}.

    baseline and report: report.build's data (the baseline as stored, the report before this section).
    """
    tol = {**TOLERANCES, **{family: as_number(value) for family, value in (tolerances or {}).items()}}
    old_metrics, new_metrics = metrics(baseline), metrics(report)
    since = baseline["generated"]
    regressions, changes, compared, improved = [], [], 0, 0
    for key, new_check in sorted(new_metrics.items()):
        where, _section, name = key
        old_check = old_metrics.get(key)
        if old_check is None:
            continue
        rule = rule_for(new_check)
        old, new = _number(old_check.get("value")), _number(new_check.get("value"))
        if old is None:
            continue
        label = f"{where} {name}"
        if new is None:
            changes.append(
                {
                    "check": label,
                    "status": "warn",
                    "message": f"measured {old:g} on {since}, no value now: {new_check['message']}",
                    "value": None,
                    "baseline": old,
                    "unit": new_check.get("unit"),
                    "code": "BASELINE_NOT_MEASURED",
                }
            )
            continue
        compared += 1
        limit = _limit(old, rule, tol[rule.family])
        worse = new < limit if rule.higher_is_better else new > limit
        if worse:
            regressions.append(
                {
                    "check": label,
                    "status": "fail",
                    "message": f"{name} {_describe(old, new, new_check.get('unit'), rule, tol[rule.family])}",
                    "value": new,
                    "baseline": old,
                    "threshold": round(limit, 6),
                    "tolerance": tol[rule.family],
                    "unit": new_check.get("unit"),
                    "code": "BASELINE_REGRESSION",
                }
            )
        elif (new > old) == rule.higher_is_better and new != old:
            improved += 1
    changes += _version_changes(baseline.get("versions") or {}, report.get("versions") or {}, since)
    summary = {
        "check": "baseline",
        "status": "pass",
        "message": f"{compared - len(regressions)} of {compared} metrics within tolerance of the baseline of "
        f"{since} ({improved} better)",
        "value": compared - len(regressions),
        "threshold": compared,
        "unit": None,
        "code": None,
    }
    return {
        "checks": [*regressions, *changes, summary],
        "since": since,
        "regressions": regressions,
        "changes": changes,
        "compared": compared,
        "improved": improved,
    }


def _version_changes(old: dict[str, Any], new: dict[str, Any], since: str) -> list[dict[str, Any]]:
    """A warning per node and component whose version differs from the baseline's."""
    out = []
    for host in sorted(set(old) & set(new)):
        for component in sorted(set(old[host] or {}) | set(new[host] or {})):
            before, after = (old[host] or {}).get(component), (new[host] or {}).get(component)
            if before != after:
                out.append(
                    {
                        "check": f"{host} version.{component}",
                        "status": "warn",
                        "message": f"{component} was {before or 'absent'} on {since}, now {after or 'absent'}; "
                        "record a new baseline if the change was meant (doctor_accept=true)",
                        "value": after,
                        "baseline": before,
                        "unit": None,
                        "code": "BASELINE_VERSION_CHANGED",
                    }
                )
    return out


def no_baseline(path: str) -> dict[str, Any]:
    """The baseline section of a run with no baseline stored yet."""
    message = f"no baseline at {path} yet: rerun with -e doctor_accept=true to record this run as the baseline"
    return {
        "checks": [{"check": "baseline", "status": "unavailable", "message": message, "code": "BASELINE_MISSING"}],
        "since": None,
        "regressions": [],
        "changes": [],
        "compared": 0,
        "improved": 0,
    }
