"""Slurm as data: `sacctmgr -P -n show` output and the commands that make it match (additions and changes only:
removing an account or user is left to an administrator, as it can cancel jobs); node states and drain reasons;
a compute node's health as check records.

Pure functions; the slurm_accounting, slurm_drain and slurm_health modules run the commands.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import (
    Check,
    failed,
    not_applicable,
    passed,
    said,
    unavailable,
    warned,
)


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


def slurm_seconds(text: Any) -> int | None:
    """A Slurm time ("90" minutes, "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS", or whole seconds as an
    int) -> seconds; None for empty or UNLIMITED. Raises ValueError for anything else."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    text = str(text).strip()
    if text in ("", "UNLIMITED", "INFINITE"):
        return None
    days, clock = text.rpartition("-")[::2]
    parts = [int(part) for part in clock.split(":")]  # ValueError on anything but digits
    if days:
        parts = (parts + [0, 0])[:3]  # D-HH, D-HH:MM
        return int(days) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
    if len(parts) == 1:
        return parts[0] * 60  # plain minutes
    if len(parts) == 2:
        return parts[0] * 60 + parts[1]
    if len(parts) == 3:
        return parts[0] * 3600 + parts[1] * 60 + parts[2]
    raise ValueError(f"not a Slurm time: {text!r}")


def _names(value: Any) -> str:
    items = value.split(",") if isinstance(value, str) else list(value or [])
    return ",".join(sorted(str(item).strip() for item in items if str(item).strip()))


# A QOS entry's keys: the sacctmgr option that sets it, the `sacctmgr show qos` field that reads it back, and
# how both sides are compared (sacctmgr shows times as [D-]HH:MM:SS and modes in its own case).
QOS_KEYS = {
    "priority": ("Priority", "Priority", str),
    "preempt": ("Preempt", "Preempt", _names),
    "preempt_mode": ("PreemptMode", "PreemptMode", lambda v: str(v).lower()),
    "grace_time": ("GraceTime", "GraceTime", slurm_seconds),
    # A bare number is minutes to sacctmgr here (a grace time in whole seconds is the int case of slurm_seconds).
    "max_wall": ("MaxWall", "MaxWall", lambda v: slurm_seconds(str(v))),
    "max_tres_per_user": ("MaxTRESPerUser", "MaxTRESPU", _names),
}
QOS_FIELDS = ["Name"] + [shown_as for _option, shown_as, _same in QOS_KEYS.values()]


def _qos_changes(wanted: Mapping[str, Any], shown: Mapping[str, str] | None) -> dict[str, str]:
    """sacctmgr options that make a QOS as `wanted` (only the keys it gives); shown None: it does not exist."""
    changes = {}
    for key, (option, field, same) in QOS_KEYS.items():
        if key not in wanted:
            continue
        value = _names(wanted[key]) if key == "preempt" else wanted[key]
        if shown is None or same(shown.get(field, "")) != same(value):
            changes[option] = value  # Preempt= (empty) clears the list
    return changes


def plan(
    cluster: str,
    clusters: list[str],
    accounts: list[dict[str, Any]],
    qos: list[dict[str, Any]],
    existing_accounts: list[dict[str, str]],
    existing_users: list[dict[str, str]],
    existing_qos: list[dict[str, str]],
    root_qos: list[str] | None = None,
) -> list[list[str]]:
    """sacctmgr argument lists (without `sacctmgr -i`) that add what is missing and fix what differs.

    accounts: [{name, description, organization, fairshare, qos: [..], users: [..]}];
    qos: [{name, priority, preempt: [..], preempt_mode, grace_time, max_wall, max_tres_per_user}];
    existing_accounts: rows {Account, Fairshare, QOS} of account associations (User empty) on the cluster;
    existing_users: rows {Account, User} of user associations on the cluster; existing_qos: rows QOS_FIELDS;
    root_qos: QOS the cluster's root association (and so every account that names none of its own) may use.
    """
    commands: list[list[str]] = []
    if cluster not in clusters:
        commands.append(["add", "cluster", cluster])
    have_qos = {row["Name"]: row for row in existing_qos}
    for q in qos:
        if q["name"] not in have_qos:
            settings = _qos_changes({"priority": 0, **q}, None)
            settings.pop("Preempt", None)  # set below: a QOS may only preempt QOS that exist
            commands.append(["add", "qos", q["name"], *_kv(settings)])
    for q in qos:
        # A QOS added above has every setting but Preempt already.
        shown = have_qos.get(q["name"], {"Preempt": ""})
        changes = _qos_changes(q if q["name"] in have_qos else {"preempt": q.get("preempt", [])}, shown)
        if changes:
            commands.append(["modify", "qos", "where", f"Name={q['name']}", "set", *_kv(changes)])
    have_accounts = {row["Account"]: row for row in existing_accounts}
    root = have_accounts.get("root", {})
    missing = [name for name in root_qos or [] if name not in _names(root.get("QOS", "")).split(",")]
    if missing:
        commands.append(
            ["modify", "account", "where", "Name=root", f"Cluster={cluster}", "set", f"QOS+={','.join(missing)}"]
        )
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
            why[host] = f"unknown to Slurm ({said(rc, out, err)})"
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


# Job states that do not change again by themselves (REQUEUED and the rest go back to PENDING or RUNNING).
JOB_ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
             "DEADLINE"}  # fmt: skip


def job_end(line: str) -> tuple[str, str] | None:
    """`scontrol -o show job ID` -> (JobState, ExitCode "status:signal") once the job has ended, else None."""
    fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
    if "JobState" not in fields:
        raise SlurmParseError(f"no JobState= in scontrol output: {line[:200]!r}")
    state = fields["JobState"]
    return (state, fields.get("ExitCode", "?")) if state in JOB_ENDED else None


# States in which slurmctld has given the node up: it starts nothing there until slurmd answers again.
LOST = {"DOWN", "FAIL"}


def node_health(node: str, slurmd: str, shown: tuple[int, str], unmunged: tuple[int, str] | None) -> list[Check]:
    """A compute node's Slurm records: its slurmd (`systemctl is-active` word), whether a munge credential
    made on the controller decodes here (`unmunge` rc and output; None when none was handed over), and its
    state as slurmctld sees it (`scontrol -o show node` rc and output), in that order: a cause before what
    it causes (a foreign munge key also keeps scontrol from reaching slurmctld)."""
    records = [
        passed("slurm.slurmd", "slurmd is active")
        if slurmd == "active"
        else failed(
            "slurm.slurmd",
            f"slurmd is {slurmd or 'not installed'} on {node}: no job starts here (systemctl status slurmd, "
            "journalctl -u slurmd)",
            code="SLURM_SLURMD_DOWN",
        )
    ]
    if unmunged is not None:
        rc, out = unmunged
        records.append(
            passed("slurm.munge", "a credential made on the controller decodes here")
            if rc == 0
            else failed(
                "slurm.munge",
                f"a credential made on the controller does not decode on {node} ({out.strip()[:160]}): the munge "
                "keys differ, or munged is down here; the slurm role puts the same key on every node",
                code="SLURM_MUNGE",
            )
        )
    rc, out = shown
    if rc != 0 and "Invalid node name" in out:
        records.append(
            failed(
                "slurm.node",
                f"slurmctld does not know {node}: {out.strip()[:200]} (NodeName in slurm.conf, the slurm role)",
                code="SLURM_NODE_UNKNOWN",
            )
        )
    elif rc != 0:
        answer = "did not answer in 30 s" if rc == 124 else f"failed: {out.strip()[:200]}"
        records.append(
            failed(
                "slurm.node",
                f"asking slurmctld about {node} {answer} (slurmctld on the controller, the network, munge)",
                code="SLURM_CTLD_UNREACHABLE",
            )
        )
    else:
        state, reason = parse_node_line(out.strip())
        flags = set(state.rstrip("*~#!%$@^-").split("+"))
        because = f" ({reason})" if reason else ""
        if flags & LOST:
            records.append(
                failed(
                    "slurm.node",
                    f"slurmctld reports {node} {state}{because}: it has lost the node's slurmd "
                    "(the network, munge, slurmd's log)",
                    code="SLURM_NODE_DOWN",
                )
            )
        elif "NOT_RESPONDING" in flags or state.endswith("*"):
            records.append(
                warned(
                    "slurm.node",
                    f"slurmctld reports {node} {state}: its last ping went unanswered; after SlurmdTimeout it marks "
                    "the node DOWN (a node too busy to answer, the network, munge)",
                    code="SLURM_NOT_RESPONDING",
                )
            )
        elif flags & {"DRAIN", "DRAINED", "DRAINING"} and not reason.startswith(GPULAB_REASON):
            records.append(
                warned(
                    "slurm.node", f"{node} is {state}{because}: drained by hand, it takes no jobs", code="SLURM_DRAINED"
                )
            )
        else:
            records.append(passed("slurm.node", f"slurmctld reports {node} {state}{because}"))
    return records


def parse_config(text: str) -> dict[str, str]:
    """`scontrol show config` ("PreemptType             = preempt/qos" lines) -> {key: value}."""
    pairs = (line.split("=", 1) for line in text.splitlines() if " = " in line)
    return {key.strip(): value.strip() for key, value in pairs}


def _tier_words(row: Mapping[str, str], preempted_by: list[str]) -> str:
    words = [f"priority {row.get('Priority') or 0}"]
    mode = (row.get("PreemptMode") or "cluster").lower()
    if preempted_by:
        grace = slurm_seconds(row.get("GraceTime", "")) or 0
        words.append(
            f"preempted by {', '.join(preempted_by)} ({mode if mode != 'cluster' else 'cluster mode'}, {grace} s grace)"
        )
    if row.get("MaxWall"):
        words.append(f"at most {row['MaxWall']}")
    return f"{row['Name']}: {', '.join(words)}"


def scheduler_health(
    shown: tuple[int, str], qos_rows: list[dict[str, str]], preemption: bool, tiers: list[str]
) -> list[Check]:
    """The controller's scheduling setup: `scontrol show config` (rc, output), the QOS as `sacctmgr show qos`
    lists them (QOS_FIELDS rows), whether the inventory asks for preemption, and the tiers it names (empty:
    every QOS accounting has is shown, none required)."""
    rc, out = shown
    if rc != 0:
        message = f"scontrol show config failed ({out.strip()[:200]}): is slurmctld running on the controller?"
        return [failed("slurm.preemption", message, code="SLURM_CTLD_UNREACHABLE")]
    config = parse_config(out)
    kind, mode = config.get("PreemptType", "preempt/none"), config.get("PreemptMode", "OFF")
    if not preemption:
        if kind == "preempt/none":
            return [not_applicable("slurm.preemption", "preemption is off (slurm_preemption: false)")]
        return [passed("slurm.preemption", f"PreemptType={kind}, PreemptMode={mode}, set outside gpulab's preset")]
    if kind != "preempt/qos":
        return [
            failed(
                "slurm.preemption",
                f"the inventory asks for preemption by QOS (slurm_preemption) but slurmctld runs PreemptType={kind}: "
                "rerun --tags slurm (it restarts slurmctld with the new slurm.conf)",
                code="SLURM_PREEMPTION_OFF",
            )
        ]
    records = [passed("slurm.preemption", f"PreemptType={kind}, PreemptMode={mode}", value=mode)]
    by_name = {row["Name"]: row for row in qos_rows}
    missing = [name for name in tiers if name not in by_name]
    tiers = tiers or list(by_name)
    if missing:
        records.append(
            failed(
                "slurm.qos",
                f"QOS tier(s) {', '.join(missing)} missing from Slurm accounting (sacctmgr show qos): jobs asking "
                "for them are refused; rerun --tags slurm",
                code="SLURM_QOS_MISSING",
            )
        )
        return records
    preempted_by = {name: [n for n in tiers if name in by_name[n].get("Preempt", "").split(",")] for name in tiers}
    records.append(
        passed(
            "slurm.qos",
            "; ".join(_tier_words(by_name[name], preempted_by[name]) for name in tiers),
            value=[dict(by_name[name], PreemptedBy=",".join(preempted_by[name])) for name in tiers],
        )
    )
    return records


# One node list's part, and the GRES a job holds on it: "Nodes=gpu[1-2] CPU_IDs=0 Mem=200 GRES=gpu:1(IDX:0)".
_JOB_NODES = re.compile(r"\bNodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=(\S*)")
_GPU_IDX = re.compile(r"\bgpu(?::[^:(]+)?:\d+\(IDX:([0-9,-]+)\)")


def _numbers(ranges: str) -> list[str]:
    """ "0-1,3" -> ["0", "1", "3"], keeping each number's zero padding ("01-03" -> "01", "02", "03")."""
    out = []
    for part in ranges.split(","):
        low, _sep, high = part.partition("-")
        out += [str(n).zfill(len(low)) for n in range(int(low), int(high or low) + 1)]
    return out


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed host list ("gpu[1-2,05],mgmt1") -> the host names."""
    hosts = []
    for prefix, ranges, suffix in re.findall(r"([^,\[]+)(?:\[([^\]]+)\])?([^,\[]*)", text):
        hosts += [f"{prefix}{n}{suffix}" for n in _numbers(ranges)] if ranges else [prefix + suffix]
    return hosts


def running_gpu_jobs(text: str) -> list[dict[str, Any]]:
    """`scontrol -d -o show job` -> the running jobs that hold GPUs: {job, name, user, runtime_s, gpus: [(node,
    index)]}; the index is Slurm's GRES IDX, the position in gres.conf's File=/dev/nvidia[0-N]."""
    jobs = []
    for line in text.splitlines():
        fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
        if fields.get("JobState") != "RUNNING":
            continue
        gpus = [
            (node, index)
            for nodes, gres in _JOB_NODES.findall(line)
            for node in expand_hostlist(nodes)
            for ranges in _GPU_IDX.findall(gres)
            for index in _numbers(ranges)
        ]
        if gpus:
            jobs.append(
                {
                    "job": fields["JobId"],
                    "name": fields.get("JobName", ""),
                    "user": fields.get("UserId", "").split("(", 1)[0],
                    "runtime_s": slurm_seconds(fields.get("RunTime", "")) or 0,
                    "gpus": gpus,
                }
            )
    return jobs


def gpu_busy(answer: Any) -> dict[tuple[str, str], float]:
    """Prometheus's answer to max_over_time(gpulab_gpu_utilization_ratio[...]) (its data.result vector) ->
    {(node, GPU index): the highest utilization in the window}."""
    if not isinstance(answer, list):
        raise SlurmParseError(f"not a Prometheus vector: {str(answer)[:200]!r}")
    return {(r["metric"]["instance"], r["metric"]["gpu"]): float(r["value"][1]) for r in answer}


def idle_gpus(jobs: list[dict[str, Any]], busy: dict[tuple[str, str], float] | str, minutes: int) -> Check:
    """GPUs that running jobs hold and that did nothing in the last `minutes` (reported as a warning: the job may
    be loading data, but a GPU held idle for long is one nobody else can use). busy: gpu_busy's map, or why
    Prometheus could not be asked. Jobs younger than the window are not judged."""
    check = "slurm.idle_gpus"
    if not jobs:
        return not_applicable(check, "no running job holds a GPU")
    if isinstance(busy, str):
        return unavailable(check, f"GPU utilization could not be read from Prometheus: {busy}")
    judged = [job for job in jobs if job["runtime_s"] >= minutes * 60]
    held = [(job, gpu) for job in judged for gpu in job["gpus"]]
    unread = [f"{node} GPU {index}" for _job, (node, index) in held if (node, index) not in busy]
    idle = [(job, (node, index)) for job, (node, index) in held if busy.get((node, index)) == 0]
    if not judged:
        return not_applicable(check, f"every running job that holds a GPU started less than {minutes} min ago")
    younger = (
        f"; {len(jobs) - len(judged)} job(s) younger than {minutes} min not judged" if len(judged) < len(jobs) else ""
    )
    if idle:
        named = "; ".join(
            f"job {job['job']} {job['name']} ({job['user']}) on {node} GPU {index}" for job, (node, index) in idle
        )
        return warned(
            check,
            f"{len(idle)} GPU(s) held by running jobs did nothing in the last {minutes} min: {named}{younger}",
            value=len(idle),
            threshold=0,
            code="GPU_IDLE_IN_JOB",
        )
    if unread and len(unread) == len(held):
        return unavailable(check, f"no utilization in Prometheus for {', '.join(unread)}: is the GPU collector up?")
    missing = f"; no utilization for {', '.join(unread)}" if unread else ""
    return passed(
        check,
        f"{len(held) - len(unread)} GPU(s) in {len(judged)} running job(s) busy within the last {minutes} min"
        + missing
        + younger,
        value=0,
        threshold=0,
    )
