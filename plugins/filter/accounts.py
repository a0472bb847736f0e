"""The accounts role's settings, checked before anything is installed (each problem names its variable), and
the directory's users given to the Slurm accounts they are mapped to."""

from __future__ import annotations

import json
import re
from typing import Any

NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
FIRST_ID = 1000  # below: the distributions' system users and groups
DC_ONLY = re.compile(r"^dc=[a-z0-9-]+(,dc=[a-z0-9-]+)+$", re.I)


def _named(entries: list[dict[str, Any]], variable: str, id_key: str, own: bool) -> list[str]:
    """Names and, for the directory the role keeps, numeric ids: valid and unique."""
    problems = []
    seen_names: set[str] = set()
    seen_ids: dict[int, str] = {}
    for entry in entries:
        name = entry.get("name")
        if not isinstance(name, str) or not NAME.match(name):
            problems.append(f"{variable}: {json.dumps(name)} is no valid name (lower case, digits, - and _)")
            continue
        if name in seen_names:
            problems.append(f"{variable}: {name} appears twice")
        seen_names.add(name)
        if not own:
            continue
        number = entry.get(id_key)
        if not isinstance(number, int) or isinstance(number, bool) or number < FIRST_ID:
            problems.append(f"{variable}[{name}].{id_key} must be a whole number of at least {FIRST_ID}, got {number}")
        elif number in seen_ids:
            problems.append(f"{variable}[{name}].{id_key} {number} is also {seen_ids[number]}'s")
        else:
            seen_ids[number] = name
    return problems


def accounts_problems(
    inventory: list[str],
    *,
    server: str,
    uri: str,
    base_dn: str,
    ca_cert: str,
    server_cert: list[str],
    users: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    slurm_accounts: list[dict[str, Any]],
) -> list[str]:
    """What the argument spec cannot check of the accounts_* settings. uri: accounts_ldap_uri (empty when the
    role runs the directory on server, accounts_directory_host); ca_cert: accounts_tls_ca_cert; server_cert:
    [accounts_tls_cert, accounts_tls_key]; inventory: groups['all']."""
    problems = []
    own = not uri
    if uri and not uri.lower().startswith("ldaps://"):
        problems.append(f"accounts_ldap_uri must use TLS (ldaps://host), got {json.dumps(uri)}")
    if uri and not ca_cert:
        problems.append("accounts_tls_ca_cert must name the CA certificate that signed accounts_ldap_uri's")
    if any(server_cert) and not (all(server_cert) and ca_cert):
        problems.append(
            "accounts_tls_cert, accounts_tls_key and accounts_tls_ca_cert go together: give all three or none"
        )
    if own:
        if not server:
            problems.append("accounts_directory_host is empty and the inventory has no management node to default to")
        elif server not in inventory:
            problems.append(f"accounts_directory_host {json.dumps(server)} is not in the inventory")
        if not DC_ONLY.match(base_dn):
            problems.append(
                f"accounts_base_dn must be dc= parts only (dc=gpulab,dc=lan) for the directory the role runs, got "
                f"{json.dumps(base_dn)}"
            )
    problems += _named(groups, "accounts_groups", "gid", own)
    problems += _named(users, "accounts_users", "uid", own)
    user_names = [u.get("name") for u in users]
    group_names = [g.get("name") for g in groups]
    slurm_names = [a.get("name") for a in slurm_accounts]

    def unknown_account(variable: str, account: Any) -> None:
        if account and account not in slurm_names:
            known = ", ".join(str(n) for n in slurm_names) or "none"
            problems.append(f"{variable}.slurm_account {json.dumps(account)} is not one of slurm_accounts ({known})")

    for user in users:
        if own and user.get("group") not in group_names:
            problems.append(
                f"accounts_users[{user.get('name')}].group {json.dumps(user.get('group'))} is not one of "
                f"accounts_groups ({', '.join(str(n) for n in group_names) or 'none'})"
            )
        unknown_account(f"accounts_users[{user.get('name')}]", user.get("slurm_account"))
    for group in groups:
        strangers = [m for m in group.get("members") or [] if m not in user_names]
        if own and strangers:
            problems.append(
                f"accounts_groups[{group.get('name')}].members: not in accounts_users: {', '.join(strangers)}"
            )
        unknown_account(f"accounts_groups[{group.get('name')}]", group.get("slurm_account"))
    return problems


def accounts_slurm(
    slurm_accounts: list[dict[str, Any]], users: list[dict[str, Any]], groups: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """slurm_accounts with each directory user added to the users of the account it is mapped to: its own
    slurm_account, and that of every group it is a member of."""
    mapped: dict[str, list[str]] = {}
    for user in users:
        if user.get("slurm_account"):
            mapped.setdefault(user["slurm_account"], []).append(user["name"])
    for group in groups:
        if group.get("slurm_account"):
            mapped.setdefault(group["slurm_account"], []).extend(group.get("members") or [])
    return [
        {**account, "users": sorted(set(account.get("users") or []) | set(mapped.get(account["name"], [])))}
        if account.get("name") in mapped
        else account
        for account in slurm_accounts
    ]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"accounts_problems": accounts_problems, "accounts_slurm": accounts_slurm}
