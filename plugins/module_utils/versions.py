"""Software versions of a node, and whether every node of the cluster runs the same ones."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import (
    Check,
    failed,
    not_applicable,
    passed,
    unavailable,
)

COMPONENTS = ("os", "kernel", "driver", "cuda", "nccl", "slurm")
# The training role's frameworks: component -> its distribution's name as a .dist-info directory spells it.
FRAMEWORKS = {
    "pytorch": "torch",
    "deepspeed": "deepspeed",
    "webdataset": "webdataset",
    "scikit-learn": "scikit_learn",
    "tensorflow": "tensorflow",
    "jax": "jax",
    "ray": "ray",
}
ALL_COMPONENTS = COMPONENTS + tuple(FRAMEWORKS)

_DRIVER = re.compile(r"Kernel Module(?: for x86_64)?\s+(\d+\.\d+(?:\.\d+)?)")
_SMI_DRIVER = re.compile(r"^\d+\.\d+(?:\.\d+)?$")
_VBIOS = re.compile(r"^[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f]{2}){3,5}$")  # 96.00.74.00.01, 95.02.3C.40.B6
_NVCC = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")
_SLURM = re.compile(r"^slurm(?:-wlm)? (\S+)")


def parse_driver_proc(text: str) -> str | None:
    """/proc/driver/nvidia/version -> '550.127.05'."""
    m = _DRIVER.search(text)
    return m.group(1) if m else None


def parse_smi_driver(text: str) -> str | None:
    """`nvidia-smi --query-gpu=driver_version[,...] --format=csv,noheader` -> '550.127.05' (one line per GPU)."""
    first = text.strip().splitlines()[0].split(",")[0].strip() if text.strip() else ""
    return first if _SMI_DRIVER.match(first) else None


def parse_smi_vbios(text: str) -> str | None:
    """`nvidia-smi --query-gpu=driver_version,vbios_version --format=csv,noheader` -> the GPUs' VBIOS versions,
    distinct ones in GPU order joined by ' / '; None when a line has none ('[N/A]', a stand-in's output)."""
    found: list[str] = []
    for line in text.strip().splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != 2 or not _VBIOS.match(fields[1]):
            return None
        found += [] if fields[1] in found else [fields[1]]
    return " / ".join(found) or None


def parse_nvcc(text: str) -> str | None:
    """`nvcc --version` -> '12.4.131'."""
    m = _NVCC.search(text)
    return m.group(2) if m else None


def parse_slurm(text: str) -> str | None:
    """`slurmd -V` -> '22.05.8'."""
    m = _SLURM.search(text.strip())
    return m.group(1) if m else None


def parse_dpkg_version(text: str) -> str | None:
    """`dpkg-query -W -f '${Version}' pkg` -> upstream version ('2.21.5-1+cuda12.4' -> '2.21.5')."""
    version = text.strip()
    if not version:
        return None
    version = version.split(":", 1)[-1]
    return version.split("-", 1)[0]


def nccl_version_from_code(code: int) -> str | None:
    """ncclGetVersion's integer -> '2.21.5' (major*10000 + minor*100 + patch since 2.9; major*1000 before)."""
    if code <= 0:
        return None
    if code >= 20900:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


def parse_dist_info(names: list[str]) -> dict[str, str]:
    """A site-packages directory's entries -> framework -> version
    (torch-2.13.0+cpu.dist-info -> pytorch: 2.13.0+cpu); other entries are ignored."""
    components = {dist: component for component, dist in FRAMEWORKS.items()}
    found = {}
    for name in names:
        if not name.endswith(".dist-info"):
            continue
        dist, _sep, version = name[: -len(".dist-info")].partition("-")
        component = components.get(re.sub(r"[-_.]+", "_", dist).lower())
        if component and version:
            found[component] = version
    return found


def odd_ones_out(values: dict[str, str]) -> tuple[str, list[str]]:
    """The most common value and the hosts that differ from it (a tie goes to the first value sorted)."""
    counts = Counter(values.values())
    majority = max(sorted(counts), key=lambda v: counts[v])
    return majority, sorted(h for h, v in values.items() if v != majority)


def compare(
    versions: dict[str, dict[str, Any]],
    components: tuple[str, ...] = COMPONENTS,
    required: dict[str, list[str]] | None = None,
) -> list[Check]:
    """One record per component: pass when every node that has it runs the same version.

    A node without a component (no GPU driver on the management node) is not a mismatch, unless
    `required` (host -> components) says it must have it (a node declared with GPUs needs a
    driver): then its absence fails. A component no node has, and none must, is unavailable.
    """
    required = required or {}
    records = []
    for component in components:
        present = {host: str(v[component]) for host, v in versions.items() if v.get(component) not in (None, "")}
        missing = sorted(h for h in versions if h not in present)
        lacking = [f"{h} reports none, though it must have one" for h in missing if component in required.get(h, ())]
        if not present and not lacking:
            if component in FRAMEWORKS:  # no training environment holds it: nothing to compare
                records.append(
                    not_applicable(f"consistency.{component}", f"no node has {component} in its training environment")
                )
            else:
                records.append(unavailable(f"consistency.{component}", f"no node reports a {component} version"))
            continue
        majority, odd = odd_ones_out(present) if present else (None, [])
        if not odd and not lacking:
            note = f" (not installed on {', '.join(missing)})" if missing else ""
            records.append(
                passed(f"consistency.{component}", f"{len(present)} nodes run {majority}{note}", value=majority)
            )
            continue
        others = f"; the others run {majority}" if present else f"; no node reports a {component} version"
        records.append(
            failed(
                f"consistency.{component}",
                "; ".join([*(f"{h} runs {present[h]}" for h in odd), *lacking]) + others,
                value=dict(sorted(present.items())),
                threshold=majority,
                code="VERSION_MISMATCH" if odd else "VERSION_MISSING",
            )
        )
    return records
