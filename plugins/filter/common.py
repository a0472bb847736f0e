"""The common role's settings checked before anything is installed, each problem naming its variable."""

from __future__ import annotations

from typing import Any


def common_problems(ntp_local_stratum: Any) -> list[str]:
    """What the argument spec cannot check: the stratum chrony serves at without upstream time (1 to 15)."""
    try:
        stratum = int(ntp_local_stratum)
    except (TypeError, ValueError):
        stratum = 0
    if 1 <= stratum <= 15 and not isinstance(ntp_local_stratum, bool):
        return []
    return [f"common_ntp_local_stratum must be between 1 and 15, got {ntp_local_stratum}"]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"common_problems": common_problems}
