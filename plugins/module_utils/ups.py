"""A UPS as NUT reports it (`upsc UPS@HOST`), and as Prometheus metrics for node exporter's
textfile collector. Pure functions; gpulab's UPS collector runs upsc."""

from __future__ import annotations

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import Check, failed, passed, said
from ansible_collections.gpulab.cluster.plugins.module_utils.prom_text import family

# ups.status flags (NUT's docs/new-drivers.txt) that the alert rules and the report read.
STATUS_FLAGS = {"OL": "online", "OB": "on_battery", "LB": "low_battery", "FSD": "forced_shutdown"}
# NUT variables worth a gauge: (variable, metric, help).
GAUGES = (
    ("battery.charge", "gpulab_ups_battery_charge_percent", "Battery charge, percent."),
    ("battery.runtime", "gpulab_ups_battery_runtime_seconds", "Runtime left on battery, seconds."),
    ("ups.load", "gpulab_ups_load_percent", "Load, percent of the UPS's capacity."),
    ("ups.realpower", "gpulab_ups_realpower_watts", "Real power drawn from the UPS, watts."),
)


class UpsParseError(ValueError):
    """upsc output that is not `variable: value` lines."""


def parse_upsc(text: str) -> dict[str, str]:
    """`upsc ups@host` -> {variable: value}; a line without ': ' is an error (upsc's own warnings go to stderr)."""
    values = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, sep, value = line.partition(": ")
        if not sep or " " in name:
            raise UpsParseError(f"not a 'variable: value' line of upsc: {line[:200]!r}")
        values[name] = value.strip()
    if "ups.status" not in values:
        raise UpsParseError("upsc gave no ups.status")
    return values


def status_flags(values: dict[str, str]) -> set[str]:
    """The flags of ups.status ('OB LB' -> {'OB', 'LB'})."""
    return set(values.get("ups.status", "").split())


def _number(raw: str | None) -> float | None:
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def render(ups: str, values: dict[str, str] | None, error: str | None = None) -> str:
    """The textfile for one collection of UPS `ups`. values None means upsd could not be asked (error says why)."""
    lines = family(
        "gpulab_ups_up", "gauge", "1 when upsd answered for the UPS.", [({"ups": ups}, int(values is not None))]
    )
    if values is None:
        lines += family(
            "gpulab_ups_error", "gauge", "Why the UPS could not be read.", [({"ups": ups, "reason": error}, 1)]
        )
        return "\n".join(lines) + "\n"
    flags = status_flags(values)
    for flag, name in STATUS_FLAGS.items():
        lines += family(
            f"gpulab_ups_{name}", "gauge", f"1 while ups.status carries {flag}.", [({"ups": ups}, int(flag in flags))]
        )
    for variable, metric, help_text in GAUGES:
        value = _number(values.get(variable))
        lines += family(metric, "gauge", help_text, [({"ups": ups}, value)] if value is not None else [])
    return "\n".join(lines) + "\n"


def ups_record(rc: int, out: str, err: str, target: str) -> Check:
    """The UPS as the validation report judges it: on line passes; on battery, low battery or unreadable fails."""
    try:
        values = parse_upsc(out) if rc == 0 else None
    except UpsParseError as exc:
        values, err = None, str(exc)
    if values is None:
        return failed(
            "ups",
            f"upsc {target} failed ({said(rc, out, err)}): upsd or its driver does not answer, so no node would "
            "learn of a power cut",
            code="UPS_UNREACHABLE",
        )
    flags = status_flags(values)
    charge = _number(values.get("battery.charge"))
    state = f"battery {values.get('battery.charge', '?')} %, {values.get('battery.runtime', '?')} s of runtime"
    if flags & {"LB", "FSD"}:
        return failed(
            "ups",
            f"{target} is on battery and low ({values['ups.status']}, {state}): the nodes are shutting down",
            value=charge,
            unit="%",
            code="UPS_LOW_BATTERY",
        )
    if "OB" in flags:
        return failed(
            "ups",
            f"{target} runs on battery ({state}): the ups role drains the Slurm nodes (and signals their jobs, "
            "with ups_job_signal) until power is back, and shuts the nodes down at low battery",
            value=charge,
            unit="%",
            code="UPS_ON_BATTERY",
        )
    return passed("ups", f"{target} is on line ({values['ups.status']}, {state})", value=charge, unit="%")
