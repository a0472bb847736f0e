"""The check record every gpulab validation module returns, and how records become a verdict.

A record is {check, status, value, threshold, unit, message, code}. `unavailable` means
the check could not run (no GPU, no driver, tool missing): it is never a hardware fault.
`n/a` means the check does not apply to this hardware (ECC on a GeForce card): it never
changes a verdict. What the inventory declares and cannot be found is `fail`, not `unavailable`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

PASS = "pass"
WARN = "warn"
FAIL = "fail"
UNAVAILABLE = "unavailable"
NOT_APPLICABLE = "n/a"
STATUSES = (PASS, WARN, FAIL, UNAVAILABLE, NOT_APPLICABLE)
# How bad each status is, for the overall verdict (unavailable sits between pass and warn;
# n/a below pass, so it is the overall status only when nothing else applies).
SEVERITY = {NOT_APPLICABLE: -1, PASS: 0, UNAVAILABLE: 1, WARN: 2, FAIL: 3}
FAIL_ON_CHOICES = ("fail", "warn", "never")


def said(rc: int, out: str, err: str, limit: int = 200) -> str:
    """What a command that failed said: its error output (else its output), cut to `limit` characters, or its
    exit status where it said nothing."""
    return (err or out).strip()[:limit] or f"exit {rc}"


def as_number(value: Any) -> float | None:
    """A setting as a number (a numeric string from the command line too); None for anything else, bools too."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def fail_on_option() -> dict[str, Any]:
    """The fail_on entry of every check module's argument spec (documented once, in doc_fragments/checks.py)."""
    return {"type": "str", "choices": list(FAIL_ON_CHOICES), "default": "fail"}


@dataclass(frozen=True)
class Check:
    check: str
    status: str
    message: str
    value: Any = None
    threshold: Any = None
    unit: str | None = None
    code: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def passed(check: str, message: str, **kw: Any) -> Check:
    return Check(check, PASS, message, **kw)


def warned(check: str, message: str, **kw: Any) -> Check:
    return Check(check, WARN, message, **kw)


def failed(check: str, message: str, **kw: Any) -> Check:
    return Check(check, FAIL, message, **kw)


def unavailable(check: str, message: str, **kw: Any) -> Check:
    return Check(check, UNAVAILABLE, message, **kw)


def not_applicable(check: str, message: str, **kw: Any) -> Check:
    return Check(check, NOT_APPLICABLE, message, **kw)


def at_least(check: str, value: float | None, threshold: float, unit: str, what: str, **kw: Any) -> Check:
    """pass when value >= threshold, else fail; unavailable when value is None."""
    if value is None:
        return unavailable(check, f"{what}: no value reported", threshold=threshold, unit=unit, **kw)
    if value >= threshold:
        return passed(
            check, f"{what} {value:g} {unit} >= {threshold:g}", value=value, threshold=threshold, unit=unit, **kw
        )
    return failed(
        check, f"{what} {value:g} {unit} is below {threshold:g}", value=value, threshold=threshold, unit=unit, **kw
    )


def at_most(check: str, value: float | None, threshold: float, unit: str, what: str, **kw: Any) -> Check:
    """pass when value <= threshold, else fail; unavailable when value is None."""
    if value is None:
        return unavailable(check, f"{what}: no value reported", threshold=threshold, unit=unit, **kw)
    if value <= threshold:
        return passed(
            check, f"{what} {value:g} {unit} <= {threshold:g}", value=value, threshold=threshold, unit=unit, **kw
        )
    return failed(
        check, f"{what} {value:g} {unit} exceeds {threshold:g}", value=value, threshold=threshold, unit=unit, **kw
    )


def overall(records: list[Check]) -> str:
    """The worst status among the records (pass for none; n/a only when nothing else applies)."""
    return max((r.status for r in records), key=SEVERITY.__getitem__, default=PASS)


def blocking_statuses(fail_on: str) -> set[str]:
    """Statuses that fail the task: fail_on=fail -> fail; warn -> warn or fail; never -> none."""
    if fail_on not in FAIL_ON_CHOICES:
        raise ValueError(f"fail_on must be one of {FAIL_ON_CHOICES}, got {fail_on!r}")
    return {"fail": {FAIL}, "warn": {FAIL, WARN}, "never": set()}[fail_on]


def blocking_findings(findings: list[dict[str, Any]], fail_on: str) -> list[dict[str, Any]]:
    """A report's findings (dicts with a status) that fail the run under fail_on."""
    bad = blocking_statuses(fail_on)
    return [f for f in findings if f["status"] in bad]


def failing(records: list[Check], fail_on: str) -> list[Check]:
    """Records that should fail the task under fail_on."""
    bad = blocking_statuses(fail_on)
    return [r for r in records if r.status in bad]


def summary(records: list[Check]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for r in records:
        counts[r.status] += 1
    return counts


def module_result(records: list[Check], fail_on: str, **extra: Any) -> tuple[dict[str, Any], str | None]:
    """The module's return values, and a failure message when fail_on says the task must fail."""
    result = {
        "changed": False,
        "status": overall(records),
        "summary": summary(records),
        "checks": [r.as_dict() for r in records],
        **extra,
    }
    bad = failing(records, fail_on)
    if not bad:
        return result, None
    lines = "; ".join(f"{r.check}: {r.message}" for r in bad)
    return result, f"{len(bad)} check(s) at or above '{fail_on}': {lines}"


def exit_with_records(module: Any, records: list[Check], **extra: Any) -> None:
    """End an AnsibleModule run with the records: fail_json when its fail_on says so, else exit_json."""
    result, failure = module_result(records, module.params["fail_on"], **extra)
    if failure:
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)
