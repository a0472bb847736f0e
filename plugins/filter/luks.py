"""The luks role's settings checked before any disk is touched: every problem at once, each naming its variable."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def _number(kind: type[int] | type[float], value: Any) -> int | float:
    """value as the argument spec's int or float takes it ("60", "0.5" too); 0 for anything else."""
    try:
        return 0 if isinstance(value, bool) else kind(str(value))
    except ValueError:
        return 0


def luks_problems(
    devices: list[Mapping[str, Any]], *, keys: Mapping[str, Any], tang: bool, tang_settings: Mapping[str, Any],
    hosts: Iterable[str], networks: Mapping[str, Any], iteration_time: Any = None,
) -> list[str]:  # fmt: skip
    """Each device has a unique name and a key; a key derivation time, if set, is above 0; with Tang, its
    server, network and unlock timeout are real.

    tang_settings: {server, network, unlock_timeout} (luks_tang_*); hosts: the inventory's hosts;
    networks: gpulab_network's networks; iteration_time: luks_pbkdf_iteration_time.
    """
    problems = []
    names = [str(device.get("name")) for device in devices]
    keyless = [name for name in names if name not in keys]
    if keyless or len(set(names)) != len(names):
        problems.append(
            "luks_devices must have unique names, each with a key in luks_keys; "
            f"without a key: {', '.join(keyless) or 'none'}"
        )
    if iteration_time is not None and not _number(float, iteration_time) > 0:
        problems.append(f"luks_pbkdf_iteration_time must be seconds above 0, or unset (got {iteration_time})")
    if not tang:
        return problems
    server, network, timeout = (tang_settings.get(k) for k in ("server", "network", "unlock_timeout"))
    if server not in set(hosts):
        problems.append(f"luks_tang needs luks_tang_server to be an inventory host (got '{server}')")
    if network not in networks:
        known = ", ".join(networks)
        problems.append(
            f"luks_tang needs luks_tang_network to be one of gpulab_network's networks ({known}; got '{network}')"
        )
    if _number(int, timeout) < 1:
        problems.append(f"luks_tang needs luks_tang_unlock_timeout at least 1 (got {timeout})")
    return problems


def luks_key_files(devices: list[Mapping[str, Any]], keys: Mapping[str, Any], key_dir: str) -> list[dict[str, Any]]:
    """Each disk's key file as a gpulab.cluster.files entry (root only, read-only), for crypttab at boot."""
    return [
        {"path": f"{key_dir}/{device['name']}.key", "content": str(keys[device["name"]]), "owner": "root",
         "group": "root", "mode": "0400"}
        for device in devices
    ]  # fmt: skip


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"luks_problems": luks_problems, "luks_key_files": luks_key_files}
