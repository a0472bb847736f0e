"""Whether apt would change anything for a list of packages wanted present: read from dpkg's status
(pure parsing; the packages module runs dpkg-query). Opening apt's cache costs seconds per task, and
on a run that changes nothing every package task would pay it only to say "ok"."""

from __future__ import annotations

import fnmatch
import re
import shlex

# What dpkg-query prints per package: its name, its version and the status abbreviation
# (desired, current, error: "ii " installed, "hi " installed and held).
QUERY_FORMAT = "${Package}\\t${Version}\\t${db:Status-Abbrev}\\n"
# The roles' one policy for apt's lists: updated where they are older than an hour (the packages module's
# default cache_valid_time, which its action also hands to apt).
CACHE_VALID_TIME = 3600
# Where the apt module reads the time of the last update from, in its order.
UPDATE_STAMPS = ("/var/lib/apt/periodic/update-success-stamp", "/var/lib/apt/lists")
# The packages module's options (its action checks a task's options against them too).
ARGUMENT_SPEC = {
    "name": {"type": "list", "elements": "str", "required": True},
    "state": {"type": "str", "default": "present", "choices": ["present", "latest", "absent"]},
    "update_cache": {"type": "bool", "default": False},
    "cache_valid_time": {"type": "int", "default": CACHE_VALID_TIME},
    "install_recommends": {"type": "bool"},
    "allow_downgrade": {"type": "bool", "default": False},
    "allow_change_held_packages": {"type": "bool", "default": False},
    "policy_rc_d": {"type": "int"},
}
# A Debian package name, optionally =VERSION (apt's pin syntax; * matches as in the apt module).
SPEC = re.compile(r"^(?P<name>[a-z0-9][a-z0-9+.-]+)(?:=(?P<version>[A-Za-z0-9.+~:*-]+))?$")


def parse_specs(names: list[str]) -> list[tuple[str, str | None]] | None:
    """[(name, version pattern or None)], or None where a name is not a plain package (a path, >=, :arch)."""
    specs = []
    for item in names:
        found = SPEC.match(str(item).strip())
        if not found:
            return None
        specs.append((found.group("name"), found.group("version")))
    return specs


def installed(query_output: str) -> dict[str, list[str]]:
    """Name -> versions fully installed (status ?i with no error flag), from dpkg-query's output."""
    found: dict[str, list[str]] = {}
    for line in query_output.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and len(fields[2]) >= 2 and fields[2][1] == "i" and fields[2][2:].strip() == "":
            found.setdefault(fields[0], []).append(fields[1])
    return found


def held(query_output: str) -> list[str]:
    """The packages dpkg holds (desired status h), in its order, from dpkg-query's output."""
    names: list[str] = []
    for line in query_output.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[2][:1] == "h" and fields[0] not in names:
            names.append(fields[0])
    return names


def missing(specs: list[tuple[str, str | None]], query_output: str) -> list[str]:
    """The specs (as apt names them) that dpkg has not installed, or not at the pinned version."""
    have = installed(query_output)
    return [
        name if version is None else f"{name}={version}"
        for name, version in specs
        if not any(version is None or fnmatch.fnmatch(v, version) for v in have.get(name, []))
    ]


def lists_stale(update_cache: bool, cache_valid_time: int, lists_age: float | None) -> bool:
    """Whether the apt module would update its lists: asked to, and no cache_valid_time or lists older."""
    if not update_cache:
        return False
    return cache_valid_time <= 0 or lists_age is None or lists_age > cache_valid_time


def unjudged(age: float | None, why: str, **found: object) -> dict:
    """The answer where only apt can judge: apt runs."""
    return {"needs_apt": True, "missing": [], "lists_age": age, "installed": {}, "held": [], "why": why, **found}


def verdict(
    params: dict,
    check_mode: bool,
    specs: list[tuple[str, str | None]],
    query: tuple[int, str, str],
    age: float | None,
) -> dict:
    """Whether apt has anything to do for the task's options (`params`), from dpkg-query's answer for the
    specs' names (rc, stdout, stderr) and the age of apt's lists."""
    rc, out, err = query
    if rc not in (0, 1):  # 1: some names unknown to dpkg, which the parser sees as missing
        return unjudged(age, f"dpkg-query failed: {err.strip()}")
    names = [name for name, _version in specs]
    versions = installed(out)
    found = {"installed": {name: versions[name][0] for name in names if name in versions}}
    found["held"] = [name for name in held(out) if name in found["installed"]]
    if params["state"] != "present":
        return unjudged(age, f"state {params['state']}: only apt can judge", **found)
    wanting = missing(specs, out)
    stale = lists_stale(params["update_cache"], params["cache_valid_time"], age)
    if wanting:
        why = f"to install: {', '.join(wanting)}"
    elif stale and check_mode:
        why = "every package installed; apt's lists are stale, and check mode does not update them"
    else:
        why = "apt's lists to update" if stale else "every package installed and apt's lists current"
    # Apt does not update its lists in check mode: stale lists alone give it nothing to do there.
    return {
        "needs_apt": bool(wanting) or (stale and not check_mode),
        "missing": wanting,
        "lists_age": age,
        "why": why,
        **found,
    }


# The line the shell read ends with: dpkg-query's exit status, the node's clock, the lists' time (or nothing).
READ_MARK = "gpulab-read"


def read_command(names: list[str]) -> str:
    """A POSIX shell command that asks dpkg-query about `names` and says when apt's lists were last updated,
    for a node where no Python need start (the packages action's first read)."""
    stamps = " || ".join(f"stat -c %Y {shlex.quote(path)} 2>/dev/null" for path in UPDATE_STAMPS)
    query = shlex.join(["dpkg-query", "-W", f"-f={QUERY_FORMAT}", "--", *names])
    return f'{query} 2>/dev/null; echo "{READ_MARK} $? $(date +%s) $({stamps})"'


def parse_read(stdout: str) -> tuple[tuple[int, str, str], float | None] | None:
    """((dpkg-query's rc, its output, ""), the lists' age) from read_command's output; None where it is not
    that command's output."""
    # Over SSH with a terminal (Ansible asks for one where it may become another user) lines end in CRLF.
    head, mark, tail = stdout.replace("\r\n", "\n").rpartition(f"{READ_MARK} ")
    fields = tail.split()
    if not mark or len(fields) not in (2, 3) or not all(field.isdigit() for field in fields):
        return None
    age = float(int(fields[1]) - int(fields[2])) if len(fields) == 3 else None
    return (int(fields[0]), head, ""), age


# "Inst NAME [INSTALLED] (CANDIDATE ARCHIVE [ARCH])" in apt-get --simulate's output.
INST = re.compile(r"^Inst (?P<name>\S+) (?:\[(?P<installed>[^\]]+)\] )?\((?P<candidate>\S+) ")


def simulate_argv(
    missing: list[str], install_recommends: bool | None, allow_downgrade: bool, allow_change_held_packages: bool
) -> list[str]:
    """apt-get's command line that simulates installing `missing` with the task's options, as apt would install them."""
    argv = ["apt-get", "-y", "-q", "--simulate"]
    if install_recommends is not None:
        argv += ["-o", f"APT::Install-Recommends={'yes' if install_recommends else 'no'}"]
    if allow_downgrade:
        argv.append("--allow-downgrades")
    if allow_change_held_packages:
        argv.append("--allow-change-held-packages")
    return [*argv, "install", *missing]


def simulated(output: str) -> tuple[list[str], str]:
    """What apt-get --simulate install would do: each package it would install ("name version") or change
    ("name old -> new"), and the summary it prints before them (the lists of new and upgraded packages)."""
    changes = []
    summary = []
    for line in output.splitlines():
        if found := INST.match(line):
            old = found.group("installed")
            changes.append(" ".join([found.group("name"), *([old, "->"] if old else []), found.group("candidate")]))
        elif not line.startswith(("Inst ", "Conf ", "Remv ", "Reading ", "Building ")):
            summary.append(line)
    return changes, "\n".join(summary)
