"""Whether pip would change anything in a virtualenv for a list of requirements: judged from the versions its
Python reports (pure parsing; the python_packages module asks). A pip run lists the whole environment, which
takes seconds; on a run that changes nothing every pip task would pay it only to say "ok"."""

from __future__ import annotations

import os
import re

# How pip makes a missing virtualenv: the module's default, which its action hands to pip (whose own is virtualenv).
VIRTUALENV_COMMAND = "python3 -m venv"
# Run by the virtualenv's Python: its site-packages and each installed distribution's version, as JSON.
READ_SCRIPT = (
    "import importlib.metadata as m, json, sysconfig; "
    "print(json.dumps({'site_packages': sysconfig.get_paths()['purelib'], "
    "'versions': {d.metadata['Name']: d.version for d in m.distributions()}}))"
)
# name==version, or a bare name.
PINNED = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:==(?P<version>[A-Za-z0-9.+!-]+))?$")
# A wheel file: {distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl
WHEEL = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[A-Za-z0-9_.+!]+)-.*\.whl$")


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse(requirement: str) -> tuple[str, str | None] | None:
    """(canonical name, version or None) of name==version, a bare name or a wheel file; None: only pip judges it."""
    text = requirement.strip()
    found = WHEEL.match(os.path.basename(text)) if text.endswith(".whl") else PINNED.match(text)
    return (canonical(found.group("name")), found.group("version")) if found else None


def missing(requirements: list[str], versions: dict[str, str]) -> list[str] | None:
    """The requirements the environment does not meet (a version other than the pin, or not installed);
    None where one cannot be judged here (a range, extras, a URL)."""
    installed = {canonical(name): version for name, version in versions.items()}
    parsed = [parse(requirement) for requirement in requirements]
    if any(item is None for item in parsed):
        return None
    return [
        requirement
        for requirement, (name, version) in zip(requirements, parsed, strict=True)
        if name not in installed or (version is not None and installed[name] != version)
    ]
