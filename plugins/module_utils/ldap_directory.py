"""The directory the accounts role keeps: the entries its users and groups make, and what to change in the
entries the directory holds to match them. Pure: the module reads and writes through python-ldap."""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Any

# Every attribute the role sets on its entries; others (mail, an operator's own) are left as they are.
# userPassword is apart: a password is checked by binding with it, and set only when the bind fails.
MANAGED = {
    "user": ("objectClass", "uid", "cn", "sn", "uidNumber", "gidNumber", "homeDirectory", "loginShell", "shadowExpire"),
    "group": ("objectClass", "cn", "gidNumber", "memberUid"),
    "ou": ("objectClass", "ou"),
}
USER_CLASSES = ["inetOrgPerson", "posixAccount", "shadowAccount"]
# shadowExpire counts days since 1970-01-01; an account whose day has come is expired, which SSSD's
# ldap_account_expire_policy = shadow refuses at login. Day 1 is long past.
DISABLED_SHADOW_EXPIRE = "1"

Attrs = dict[str, list[str]]


def people(base_dn: str) -> str:
    return f"ou=people,{base_dn}"


def groups_dn(base_dn: str) -> str:
    return f"ou=groups,{base_dn}"


def user_dn(base_dn: str, name: str) -> str:
    return f"uid={name},{people(base_dn)}"


def wanted_entries(base_dn: str, users: list[dict[str, Any]], groups: list[dict[str, Any]]) -> dict[str, tuple]:
    """dn -> (kind, attributes) for the two organizational units, each user and each group.
    users: [{name, uid, group, full_name, home, shell, disabled}]; groups: [{name, gid, members}];
    a user's group is the name of one of groups (its gidNumber)."""
    gids = {g["name"]: g["gid"] for g in groups}
    entries: dict[str, tuple] = {
        people(base_dn): ("ou", {"objectClass": ["organizationalUnit"], "ou": ["people"]}),
        groups_dn(base_dn): ("ou", {"objectClass": ["organizationalUnit"], "ou": ["groups"]}),
    }
    for user in users:
        name = user["name"]
        full_name = user.get("full_name") or name
        attrs = {
            "objectClass": USER_CLASSES,
            "uid": [name],
            "cn": [full_name],
            "sn": [full_name.split()[-1]],
            "uidNumber": [str(user["uid"])],
            "gidNumber": [str(gids[user["group"]])],
            "homeDirectory": [user.get("home") or f"/home/{name}"],
            "loginShell": [user.get("shell") or "/bin/bash"],
            "shadowExpire": [DISABLED_SHADOW_EXPIRE] if user.get("disabled") else [],
        }
        entries[user_dn(base_dn, name)] = ("user", attrs)
    for group in groups:
        attrs = {
            "objectClass": ["posixGroup"],
            "cn": [group["name"]],
            "gidNumber": [str(group["gid"])],
            "memberUid": sorted(group.get("members") or []),
        }
        entries[f"cn={group['name']},{groups_dn(base_dn)}"] = ("group", attrs)
    return entries


def _by_name(attrs: Attrs) -> dict[str, tuple[str, list[str]]]:
    """Attribute names compared without case, as LDAP does: lower name -> (name, values)."""
    return {name.lower(): (name, values) for name, values in attrs.items()}


def modifications(kind: str, held: Attrs, wanted: Attrs) -> list[tuple[str, list[str]]]:
    """What to replace in an entry the directory holds: [(attribute, values)] for each managed attribute whose
    values differ (an empty list deletes it). objectClass only gains classes, never loses one:
    an entry may carry classes of the operator's."""
    have = _by_name(held)
    changes = []
    for name in MANAGED[kind]:
        values = wanted.get(name, [])
        current = have.get(name.lower(), (name, []))[1]
        if name == "objectClass":
            missing = [c for c in values if c.lower() not in {v.lower() for v in current}]
            if missing:
                changes.append((name, list(current) + missing))
        elif sorted(current) != sorted(values):
            changes.append((name, list(values)))
    return changes


def plan(held: dict[str, Attrs], wanted: dict[str, tuple]) -> list[tuple[str, str, Any]]:
    """[(dn, "add", attributes) | (dn, "modify", changes)], parents first. held: dn -> attributes of the
    entries the directory holds under the base (dn compared without case)."""
    held_by_dn = {dn.lower(): attrs for dn, attrs in held.items()}
    steps = []
    for dn, (kind, attrs) in wanted.items():
        current = held_by_dn.get(dn.lower())
        if current is None:
            steps.append((dn, "add", {name: values for name, values in attrs.items() if values}))
        else:
            changes = modifications(kind, current, attrs)
            if changes:
                steps.append((dn, "modify", changes))
    return steps


def unlisted(held: dict[str, Attrs], wanted: dict[str, tuple], base_dn: str) -> list[str]:
    """Users and groups the directory holds that the role's lists do not name: reported, never removed."""
    names = {dn.lower() for dn in wanted}
    parents = {people(base_dn).lower(), groups_dn(base_dn).lower()}
    return sorted(dn for dn in held if dn.lower() not in names and dn.lower().split(",", 1)[-1] in parents)


def ssha(password: str, salt: bytes | None = None) -> str:
    """The {SSHA} hash slapd checks a simple bind against (a fresh salt unless one is given)."""
    salt = os.urandom(8) if salt is None else salt
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def config_changes(held: Attrs, wanted: dict[str, str]) -> list[tuple[str, list[str]]]:
    """The replacements, [(attribute, [value])], that make cn=config's single-valued settings (the TLS files)
    the wanted ones."""
    have = _by_name(held)
    return [(name, [value]) for name, value in wanted.items() if have.get(name.lower(), (name, []))[1] != [value]]
