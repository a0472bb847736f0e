"""The ups role's settings checked before anything is installed: every problem at once, each naming its variable."""

from __future__ import annotations

import json
import re
from typing import Any

from ansible_collections.gpulab.cluster.plugins.filter.host_facts import missing

# NUT reads these in the password as syntax (upsd.users, upsmon.conf).
UNQUOTABLE = re.compile(r"[\s\"'\\#]")
UPS_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def ups_problems(
    inventory: list[str],
    *,
    host: str,
    password: str,
    description: str,
    name: str,
    shutdown_command: str,
    drain_nodes: list[str],
    listen_port: Any,
    gpu_power_limit: Any,
    storage_nodes: list[str],
    tier_wait: Any,
) -> list[str]:
    """What the argument spec cannot check of the ups_* settings; inventory: every host (groups['all'])."""
    problems = []
    if host not in inventory:
        problems.append(f"ups_host {json.dumps(host)} is not in the inventory")
    if not password:
        problems.append("ups_monitor_password is empty: set it (from Ansible Vault)")
    elif UNQUOTABLE.search(password):
        problems.append(
            "ups_monitor_password must not hold spaces, quotes, backslashes or # (NUT reads them as syntax)"
        )
    if '"' in description:
        problems.append("ups_description must not hold a double quote (ups.conf quotes it)")
    if not UPS_NAME.match(name):
        problems.append(f"ups_name {json.dumps(name)} must be letters, digits, - and _ (a section of ups.conf)")
    if '"' in shutdown_command:
        problems.append("ups_shutdown_command must not hold a double quote (upsmon.conf quotes it)")
    unknown = missing(drain_nodes, inventory)
    if unknown:
        problems.append(f"ups_drain_nodes names hosts that are not in the inventory: {', '.join(unknown)}")
    unknown = missing(storage_nodes, inventory)
    if unknown:
        problems.append(f"ups_storage_nodes names hosts that are not in the inventory: {', '.join(unknown)}")
    if not 0 <= int(tier_wait) <= 3600:
        problems.append(f"ups_tier_wait must be 0 (no tiers) to 3600 seconds, got {tier_wait}")
    if not 1 <= int(listen_port) <= 65535:
        problems.append(f"ups_listen_port must be 1-65535, got {listen_port}")
    if not (int(gpu_power_limit) == 0 or 50 <= int(gpu_power_limit) <= 2000):
        problems.append(f"ups_gpu_power_limit must be 0 (no cap) or watts from 50 to 2000, got {gpu_power_limit}")
    return problems


def ups_shutdown_command(waits_for: dict[str, str], seconds: int, command: str, script: str) -> str:
    """upsmon's SHUTDOWNCMD: `command`, behind `script` where the node waits for others (name -> address)."""
    if not waits_for or seconds <= 0:
        return command
    nodes = ",".join(f"{name}={address}" for name, address in sorted(waits_for.items()))
    return f"{script} {seconds} {nodes} -- {command}"


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ups_problems": ups_problems, "ups_shutdown_command": ups_shutdown_command}
