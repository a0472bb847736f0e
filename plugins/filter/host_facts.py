"""Questions about a host that several roles ask of its facts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CONTAINER_TYPES = ("docker", "container", "containerd", "podman", "lxc", "systemd-nspawn")


def in_container(facts: Mapping[str, Any]) -> bool:
    """True in a container (it shares the host's kernel and clock): needs the 'virtual' fact subset."""
    return facts.get("virtualization_role") == "guest" and facts.get("virtualization_type") in CONTAINER_TYPES


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"in_container": in_container}
