"""Refuse pins pip's configured sources do not offer, before anything is installed.

Arguments: FRAMEWORK=PACKAGE==VERSION ... Prints one JSON list of problems, each naming the
variable (training_versions.FRAMEWORK), the sources and what they do offer. The sources are
pip's own settings: PIP_FIND_LINKS, PIP_INDEX_URL, PIP_EXTRA_INDEX_URL and pip.conf.
"""

import json
import os
import subprocess
import sys


def offered(package):
    """The versions `pip index versions` lists ([] for none), or pip's error as a string."""
    run = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", package], capture_output=True, text=True, check=False
    )
    for line in run.stdout.splitlines():
        if line.startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",")]
    if "No matching distribution found" in run.stderr:
        return []
    return (run.stderr.strip().splitlines() or ["pip index failed"])[-1]


def sources():
    named = [f"wheels in {os.environ['PIP_FIND_LINKS']}"] if os.environ.get("PIP_FIND_LINKS") else []
    named.append(f"index {os.environ.get('PIP_INDEX_URL') or 'PyPI (or pip.conf)'}")
    named += [f"extra index {url}" for url in os.environ.get("PIP_EXTRA_INDEX_URL", "").split()]
    return ", ".join(named)


def problems(pins, ask=offered):
    found = []
    for arg in pins:
        framework, _eq, requirement = arg.partition("=")
        package, _eqeq, pin = requirement.partition("==")
        versions = ask(package.split("[")[0])
        if isinstance(versions, str):
            found.append(f"could not ask the configured sources ({sources()}) about {package}: {versions}")
        elif pin not in versions and not any(v.startswith(pin + "+") for v in versions):
            have = (
                f"they have {', '.join(versions[:5])}{' ...' if len(versions) > 5 else ''}"
                if versions
                else f"they have no {package}"
            )
            found.append(
                f"training_versions.{framework} is {pin}, which the configured sources ({sources()}) "
                f"do not offer for {package}; {have}"
            )
    return found


if __name__ == "__main__":
    print(json.dumps(problems(sys.argv[1:])))
