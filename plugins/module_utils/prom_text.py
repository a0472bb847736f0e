"""Prometheus's text exposition format, for the files gpulab's collectors write for node exporter's
textfile collector. Pure functions."""

from __future__ import annotations

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
