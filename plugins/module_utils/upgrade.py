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


def parse_dpkg_query(text: str) -> dict[str, str]:
    """Installed packages' versions from dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Status}\\n'
    (a removed package that left its configuration files behind is not installed)."""
    installed = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[2] == "installed":
            installed[fields[0]] = fields[1]
    return installed


def wheel_version(dist_info_names: list[str], distribution: str) -> str | None:
    """The version of distribution among a site-packages directory's names (nvidia_nccl_cu12-2.21.5.dist-info)."""
    prefix = re.sub(r"[-_.]+", "_", distribution).lower() + "-"
    for name in dist_info_names:
        if name.endswith(".dist-info") and name.lower().startswith(prefix):
            return name[len(prefix) : -len(".dist-info")]
    return None


def pin_moves(
    pins: list[dict[str, Any]], installed: dict[str, str], pending: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The pins a node does not meet yet: each pin (role, package, version: a pattern for the installed
    version, empty for "whatever apt offers", wanted: the pin in words) whose package is missing, runs
    a version the pattern does not match, or, unversioned, has an upgrade pending."""
    candidates = {p["package"]: p["candidate"] for p in pending}
    moves = []
    for pin in pins:
        package, pattern = pin["package"], pin.get("version") or ""
        now = installed.get(package)
        if now is None or (pattern and not re.search(pattern, now)):
            wanted = pin["wanted"]
        elif not pattern and package in candidates:
            wanted = candidates[package]
        else:
            continue
        moves.append({"role": pin["role"], "package": package, "installed": now, "wanted": wanted, "version": pattern})
    return moves
