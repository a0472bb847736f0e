"""The monitoring role's collector files, listed for the files module: one task writes them all."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OWNED = {"owner": "root", "group": "root", "mode": "0644"}


def collector_files(
    collectors: list[Mapping[str, Any]], lib_dir: str, code_dir: str, code_src: str
) -> list[dict[str, Any]]:
    """Every collector's script, systemd service and timer, and the parsing code they import (each file once).

    collectors: {name, code: [module_utils file names], ...}; lib_dir: where the scripts go; code_dir: where
    their module_utils go; code_src: the collection's plugins/module_utils on the controller."""
    code = list(dict.fromkeys(name for c in collectors for name in c["code"]))
    files = [{"path": f"{code_dir}/{name}", "src": f"{code_src}/{name}", **OWNED} for name in code]
    for c in collectors:
        files.append(
            {
                "path": f"{lib_dir}/gpulab_{c['name']}_metrics.py",
                "template": f"gpulab_{c['name']}_metrics.py.j2",
                **OWNED,
            }
        )
        files += [
            {
                "path": f"/etc/systemd/system/gpulab-{c['name']}-metrics.{kind}",
                "template": f"gpulab-metrics.{kind}.j2",
                "vars": {"collector": dict(c)},
                **OWNED,
            }
            for kind in ("service", "timer")
        ]
    return files


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"collector_files": collector_files}
