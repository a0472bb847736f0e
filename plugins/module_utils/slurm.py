"""Slurm accounting as data: read `sacctmgr -P -n show` output and plan the commands that make it match.

Pure functions; the slurm_accounting module runs sacctmgr. Only additions and changes are planned:
removing an account or user is left to an administrator (it can cancel jobs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any


class SlurmParseError(ValueError):
    """sacctmgr output that is not the pipe-separated table asked for."""


def parse_parsable(text: str, fields: Iterable[str]) -> list[dict[str, str]]:
    """`sacctmgr -n -P show ... format=A,B` -> [{A: .., B: ..}] (one '|' between fields, none at the end)."""
    names = list(fields)
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = line.split("|")
        if len(values) != len(names):
            raise SlurmParseError(f"expected {len(names)} fields ({', '.join(names)}), got {len(values)}: {line!r}")
        rows.append(dict(zip(names, values, strict=True)))
    return rows


def _kv(options: Mapping[str, Any]) -> list[str]:
    return [f"{key}={value}" for key, value in sorted(options.items())]


def plan(
    cluster: str,
    clusters: list[str],
    accounts: list[dict[str, Any]],
    qos: list[dict[str, Any]],
    existing_accounts: list[dict[str, str]],
    existing_users: list[dict[str, str]],
    existing_qos: list[str],
) -> list[list[str]]:
    """sacctmgr argument lists (without `sacctmgr -i`) that add what is missing and fix fair-share values.

    accounts: [{name, description, organization, fairshare, qos: [..], users: [..]}]; qos: [{name, priority}].
    existing_accounts: rows {Account, Fairshare} of account associations (User empty) on the cluster;
    existing_users: rows {Account, User} of user associations on the cluster.
    """
    commands: list[list[str]] = []
    if cluster not in clusters:
        commands.append(["add", "cluster", cluster])
    for q in qos:
        if q["name"] not in existing_qos:
            commands.append(["add", "qos", q["name"], *_kv({"Priority": q.get("priority", 0)})])
    have_accounts = {row["Account"]: row for row in existing_accounts}
    have_users = {(row["Account"], row["User"]) for row in existing_users}
    for account in accounts:
        name = account["name"]
        wanted = {
            "Cluster": cluster,
            "Description": account.get("description") or name,
            "Organization": account.get("organization") or name,
            "Fairshare": account.get("fairshare", 1),
        }
        if account.get("qos"):
            wanted["QOS"] = ",".join(account["qos"])
        if name not in have_accounts:
            commands.append(["add", "account", name, *_kv(wanted)])
        elif str(have_accounts[name].get("Fairshare")) != str(wanted["Fairshare"]):
            commands.append(
                [
                    "modify",
                    "account",
                    "where",
                    f"Name={name}",
                    f"Cluster={cluster}",
                    "set",
                    f"Fairshare={wanted['Fairshare']}",
                ]
            )
        for user in account.get("users") or []:
            if (name, user) not in have_users:
                commands.append(["add", "user", user, f"Account={name}", f"Cluster={cluster}"])
    return commands


def parse_node_line(line: str) -> tuple[str, str]:
    """`scontrol -o show node NAME` -> (State, Reason). Reason comes last and may hold spaces;
    Slurm appends ' [user@time]' to it, which is removed."""
    if " State=" not in f" {line}":
        raise SlurmParseError(f"no State= in scontrol output: {line[:200]!r}")
    state = f" {line}".split(" State=", 1)[1].split(" ", 1)[0]
    reason = line.split(" Reason=", 1)[1].strip() if " Reason=" in line else ""
    if reason.endswith("]") and " [" in reason:
        reason = reason.rsplit(" [", 1)[0]
    return state, reason


# The reasons gpulab drains Slurm nodes with, one prefix per owner. Each owner resumes only the nodes whose
# reason starts with its own prefix and leaves every other reason alone. The Slurm node check's reasons are
# "gpulab: <problem>": any gpulab reason that no other owner's prefix starts.
GPULAB_REASON = "gpulab:"
DRAIN_PREFIXES = {
    "node_check": GPULAB_REASON,
    "validate": "gpulab: validate:",
    "upgrade": "gpulab: upgrade",
    "upgrade_ceph": "gpulab: upgrade-ceph:",
    "ups": "gpulab: ups:",
}


def drain_action(state: str, reason: str, problem: str | None, prefix: str) -> str | None:
    """What to do with one node: 'drain', 'resume' or None.

    Drain a node with a problem unless someone else drained it (a reason without our prefix);
    resume a healthy node only when the reason is ours. `problem` is the text after the prefix.
    """
    ours = reason.startswith(prefix)
    if problem is not None:
        if reason and not ours:
            return None  # an administrator's drain (or another tool's): leave it
        return None if reason == f"{prefix} {problem}" and "DRAIN" in state else "drain"
    return "resume" if ours else None


# Node state flags under which Slurm starts no job step on a node.
UNSCHEDULABLE = {"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "MAINT", "NOT_RESPONDING", "FUTURE"}


def schedulable(state: str) -> bool:
    """`scontrol` State (IDLE, MIXED+DRAIN, IDLE*, DOWN+NOT_RESPONDING, ...) -> can a job step start there."""
    flags = set(state.rstrip("*~#!%$@^-").split("+"))
    return not state.endswith("*") and not flags & UNSCHEDULABLE


def left_out(run: Callable[[list[str]], tuple[int, str, str]], hosts: list[str]) -> dict[str, str]:
    """Hosts that a job step cannot use now, with why: {host: 'IDLE+DRAIN: gpulab: validate: ...'}.
    run(argv) -> (rc, stdout, stderr), as AnsibleModule.run_command returns."""
    why = {}
    for host in hosts:
        rc, out, err = run(["scontrol", "-o", "show", "node", host])
        if rc != 0:
            why[host] = f"unknown to Slurm ({(err or out).strip()[:200]})"
            continue
        state, reason = parse_node_line(out.strip())
        if not schedulable(state):
            why[host] = f"{state}: {reason}" if reason else state
    return why


def usable_hosts(run: Callable[[list[str]], tuple[int, str, str]], hosts: list[str]) -> tuple[list[str], str | None]:
    """The hosts a job step can use now, in order, and a sentence naming the others (None if none is left out)."""
    why = left_out(run, hosts)
    note = "left out, Slurm cannot run a job there: " + "; ".join(f"{h} ({w})" for h, w in why.items())
    return [h for h in hosts if h not in why], note if why else None
