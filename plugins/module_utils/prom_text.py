"""Prometheus's text exposition format, for the files gpulab's collectors write for node exporter's
textfile collector: pure functions, and the one write every collector makes (replace_file)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any


def escape(value: Any) -> str:
    """A label value as the format quotes it."""
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def labels(values: Mapping[str, Any]) -> str:
    if not values:
        return ""
    return "{" + ",".join(f'{key}="{escape(value)}"' for key, value in values.items()) + "}"


def number(value: float) -> str:
    return repr(int(value)) if float(value).is_integer() else repr(float(value))


def family(name: str, kind: str, help_text: str, samples: Iterable[tuple[Mapping[str, Any], float]]) -> list[str]:
    """A metric family's lines: HELP, TYPE and one line per (labels, value); nothing without samples."""
    lines = [f"{labels(sample_labels)} {number(value)}" for sample_labels, value in samples]
    if not lines:
        return []
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *(name + line for line in lines)]


def replace_file(path: str, text: str) -> None:
    """Write the whole file in one rename, world-readable: a reader (node exporter) never sees half of it."""
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
