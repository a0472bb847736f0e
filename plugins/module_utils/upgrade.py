"""Pure parsing and decisions for rolling upgrades: what apt would upgrade, and whether a node must reboot."""

from __future__ import annotations

import re
from typing import Any

# apt-get -s: "Inst tzdata [2026b-0+deb12u1] (2026f-0+deb12u1 Debian-Security:12/stable-security [all])";
# a package new to the node has no [installed] part.
_INST = re.compile(r"^Inst (?P<package>\S+) (?:\[(?P<installed>[^\]]+)\] )?\((?P<candidate>\S+)")


def parse_apt_simulation(text: str) -> list[dict[str, Any]]:
    """Each package apt-get -s would install or upgrade: package, installed (None when new), candidate."""
    pending = []
    for line in text.splitlines():
        match = _INST.match(line)
        if match:
            pending.append(match.groupdict())
    return pending


def _release_key(release: str) -> list[Any]:
    """Sort key for kernel releases: 6.1.0-31-amd64 after 6.1.0-9-amd64 (numbers compared as numbers)."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", release) if part]


def boot_kernel(vmlinuz_names: list[str]) -> str | None:
    """The release the boot loader starts by default (Debian's: the newest installed), from /boot's vmlinuz-* names."""
    releases = [name.removeprefix("vmlinuz-") for name in vmlinuz_names if name.startswith("vmlinuz-")]
    return max(releases, key=_release_key) if releases else None


def reboot_reasons(
    running_kernel: str,
    boot: str | None,
    loaded_nvidia: str | None,
    installed_nvidia: str | None,
    reboot_required_file: bool,
) -> list[str]:
    """Why this node must reboot to run what is installed; empty when it runs it already."""
    reasons = []
    if boot and boot != running_kernel:
        reasons.append(f"kernel {boot} is installed, {running_kernel} runs")
    if loaded_nvidia and installed_nvidia and loaded_nvidia != installed_nvidia:
        reasons.append(f"NVIDIA module {installed_nvidia} is installed, {loaded_nvidia} is loaded")
    if reboot_required_file:
        reasons.append("/run/reboot-required exists (a package asked for a reboot)")
    return reasons


def reboot_decision(reasons: list[str], in_container: bool) -> dict[str, Any]:
    """Reboot only where needed and possible: a container runs its host's kernel and cannot reboot into another."""
    if not reasons:
        return {"reboot": False, "decision": "no reboot needed: the node runs what is installed"}
    if in_container:
        return {
            "reboot": False,
            "decision": "a reboot would be needed ("
            + "; ".join(reasons)
            + "), but this is a container: it runs its host's kernel, so it is not rebooted",
        }
    return {"reboot": True, "decision": "reboot: " + "; ".join(reasons)}
