"""Whether a files task has anything to do, read with one shell command (pure functions for the files action).

On a run that changes nothing, the files module's whole work is to read and compare. The action asks the node
with `read_command` instead (stat, sha1sum, readlink, find, systemctl show) and judges the answer here with
`settled`: only where every directory, file, link, prune directory and service is as the task wants it is the
module spared. Anything this cannot judge exactly (a symbolic mode, a path through a link, odd output) counts
as unsettled, and the module runs as it always did.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shlex
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils import systemd

_ATTRIBUTES = {
    "path": {"type": "path", "required": True},
    "mode": {"type": "str", "required": True},
    "owner": {"type": "str"},
    "group": {"type": "str"},
}
# The files module's options (its action checks a task's options against them too).
ARGUMENT_SPEC = {
    "directories": {"type": "list", "elements": "dict", "default": [], "options": _ATTRIBUTES},
    "files": {
        "type": "list",
        "elements": "dict",
        "required": True,
        "options": dict(
            _ATTRIBUTES,
            content={"type": "str"},
            template={"type": "str"},
            vars={"type": "dict"},
            src={"type": "str"},
            validate={"type": "str"},
        ),
    },
    "links": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {"path": {"type": "path", "required": True}, "target": {"type": "str", "required": True}},
    },
    "prune": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {
            "path": {"type": "path", "required": True},
            "patterns": {"type": "list", "elements": "str", "required": True},
        },
    },
    "also_changed": {"type": "list", "elements": "str", "default": []},
    "services": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {
            "name": {"type": "str", "required": True},
            "start": {"type": "bool", "default": True},
            "restart_on": {"type": "list", "elements": "str", "default": []},
        },
    },
}

# stat's answer for a path: type, octal mode, uid, owner, gid, group.
STAT = "%F|%a|%u|%U|%g|%G"
MODE = re.compile(r"^0?[0-7]{3,4}$")
END = "gpulab-files-read"
# What the shell read can name safely: an absolute path without what the module's path type would expand,
# and nothing with a line break (each answer is one line).
PLAIN_PATH = re.compile(r"^/[^\n~$]*$")


def readable(params: dict[str, Any]) -> bool:
    """Whether the shell read can judge the task: plain absolute paths, link targets of one line, octal modes."""
    entries = params["directories"] + params["files"] + params["links"] + params["prune"]
    return (
        all(PLAIN_PATH.match(entry["path"]) for entry in entries)
        and all("\n" not in link["target"] for link in params["links"])
        and all(MODE.match(entry["mode"]) for entry in params["directories"] + params["files"])
    )


def _questions(params: dict[str, Any]) -> list[str]:
    """The shell commands whose answers are one line each, in the order `settled` reads them."""
    questions = []
    for entry in params["directories"] + params["files"]:
        questions.append(f"stat -c {shlex.quote(STAT)} -- {shlex.quote(entry['path'])} 2>/dev/null || echo missing")
    for entry in params["files"]:
        questions.append(f"sha1sum 2>/dev/null <{shlex.quote(entry['path'])} || echo missing")
    questions += [f"readlink -- {shlex.quote(link['path'])}" for link in params["links"]]
    for directory in params["prune"]:
        quoted = shlex.quote(directory["path"])
        # Regular files only (find -type f leaves links out), each name ended by /, which no name holds; a
        # listing find finished ends in //, so that a find that failed part way does not read as a short one.
        questions.append(
            f"if [ -d {quoted} ]; then find {quoted} -mindepth 1 -maxdepth 1 -type f -printf '%f/' && printf //; "
            f"elif [ -e {quoted} ]; then echo not-a-directory; else printf //; fi"
        )
    return questions


def read_command(params: dict[str, Any]) -> str:
    """One POSIX shell command that prints each question's answer on a line of its own, numbered (an answer
    that breaks the line shows as a line without its number), then `systemctl show` of the services, then an
    end mark."""
    lines = [f"printf '%s\\n' \"{number}:$({question})\"" for number, question in enumerate(_questions(params))]
    if params["services"]:
        names = " ".join(shlex.quote(service["name"]) for service in params["services"])
        lines.append(f"systemctl show -p {','.join(systemd.PROPERTIES)} {names} 2>/dev/null")
    lines.append(f"echo {END}")
    return "; ".join(lines)


def _attributes_match(entry: dict[str, Any], stat_line: str, kinds: tuple[str, ...]) -> bool:
    fields = stat_line.split("|")
    if len(fields) != 6 or fields[0] not in kinds:
        return False
    _kind, mode, uid, owner, gid, group = fields
    if int(mode, 8) != int(entry["mode"], 8):
        return False
    for wanted, number, name in ((entry.get("owner"), uid, owner), (entry.get("group"), gid, group)):
        if wanted is not None and wanted != (number if wanted.isdigit() else name):
            return False
    return True


def settled(params: dict[str, Any], stdout: str, check_mode: bool) -> str | None:
    """None where the shell read shows everything as the task wants it, so that the module has nothing to
    do; otherwise the first thing that differs or that this cannot judge, in words."""
    # Over SSH with a terminal (Ansible asks for one where it may become another user) lines end in CRLF.
    head, mark, _tail = stdout.replace("\r\n", "\n").rpartition(f"{END}\n")
    if not mark:
        return "the read did not finish"
    count = len(_questions(params))
    lines = head.split("\n")
    answers = []
    for number, line in enumerate(lines[:count]):
        prefix = f"{number}:"
        if not line.startswith(prefix):
            return "an answer broke its line"
        answers.append(line[len(prefix) :])
    if len(answers) != count:
        return "the read answered fewer questions than asked"
    answers.reverse()
    for entry in params["directories"]:
        if not _attributes_match(entry, answers.pop(), ("directory",)):
            return f"{entry['path']}: missing, or not as asked"
    for entry in params["files"]:
        if not _attributes_match(entry, answers.pop(), ("regular file", "regular empty file")):
            return f"{entry['path']}: missing, or not as asked"
    for entry in params["files"]:
        if answers.pop().split(" ")[0] != hashlib.sha1(entry["content"].encode()).hexdigest():
            return f"{entry['path']}: content differs"
    for link in params["links"]:
        if answers.pop() != link["target"]:
            return f"{link['path']}: not a link to {link['target']}"
    wanted = {os.path.normpath(entry["path"]) for entry in params["files"]}
    for directory in params["prune"]:
        listing = answers.pop()
        if listing == "not-a-directory":
            return f"{directory['path']}: not a directory"
        if not listing.endswith("//"):
            return f"{directory['path']}: its listing did not finish"
        for name in filter(None, listing.split("/")):
            path = os.path.normpath(os.path.join(directory["path"], name))
            if path not in wanted and any(fnmatch.fnmatch(name, pattern) for pattern in directory["patterns"]):
                return f"{path}: to remove"
    return _services_settled(params, "\n".join(lines[count:]), check_mode)


def _services_settled(params: dict[str, Any], show: str, check_mode: bool) -> str | None:
    services = params["services"]
    if not services:
        return None if not show.strip() else "unexpected output after the answers"
    if systemd.needs_reload(params["also_changed"]):
        return "systemd reads its units again"
    try:
        units = systemd.parse_show(show, len(services))
    except systemd.SystemdParseError as error:
        return str(error)
    if any(unit["NeedDaemonReload"] == "yes" for unit in units):
        return "a unit changed on disk"
    if systemd.unit_problems(services, units, missing_ok=check_mode):
        return "a unit the module must report"
    for service, todo in zip(services, systemd.plan(services, units, params["also_changed"]), strict=True):
        if todo:
            return f"{service['name']}: {', '.join(todo)}"
    return None
