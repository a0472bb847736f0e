"""GPU health from nvidia-smi (CSV, XML), NVML and the kernel log, as pure functions.

Every collector returns the same normalised dict per GPU, so the checks in `evaluate`
do not care where the numbers came from. A value the GPU does not report is None.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils import gpu_power
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import (
    Check,
    at_most,
    failed,
    not_applicable,
    passed,
    unavailable,
    warned,
)

# (normalised key, current field name, field name on older drivers)
QUERY_FIELDS = [
    ("index", "index", "index"),
    ("uuid", "uuid", "uuid"),
    ("name", "name", "name"),
    ("bus_id", "pci.bus_id", "pci.bus_id"),
    ("driver_version", "driver_version", "driver_version"),
    ("persistence_mode", "persistence_mode", "persistence_mode"),
    ("temperature", "temperature.gpu", "temperature.gpu"),
    ("power_draw", "power.draw", "power.draw"),
    ("power_limit", "power.limit", "power.limit"),
    ("pcie_gen", "pcie.link.gen.gpucurrent", "pcie.link.gen.current"),
    ("pcie_gen_max", "pcie.link.gen.max", "pcie.link.gen.max"),
    ("pcie_width", "pcie.link.width.current", "pcie.link.width.current"),
    ("pcie_width_max", "pcie.link.width.max", "pcie.link.width.max"),
    ("throttle_mask", "clocks_event_reasons.active", "clocks_throttle_reasons.active"),
    ("ecc_uncorrected_volatile", "ecc.errors.uncorrected.volatile.total", "ecc.errors.uncorrected.volatile.total"),
    ("ecc_uncorrected_aggregate", "ecc.errors.uncorrected.aggregate.total", "ecc.errors.uncorrected.aggregate.total"),
    ("ecc_corrected_volatile", "ecc.errors.corrected.volatile.total", "ecc.errors.corrected.volatile.total"),
    ("retired_pending", "retired_pages.pending", "retired_pages.pending"),
    ("retired_sbe", "retired_pages.sbe", "retired_pages.sbe"),
    ("retired_dbe", "retired_pages.dbe", "retired_pages.dbe"),
]
REMAP_FIELDS = (
    "gpu_bus_id,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure"
)

# NVML clock event reason bits (nvmlClocksEventReason*).
THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clocks_setting",
}
THROTTLE_FAIL = {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
THROTTLE_WARN = {"sw_thermal_slowdown"}
# XIDs caused by applications, not hardware (NVIDIA k8s-device-plugin's skip list).
APPLICATION_XIDS = (13, 31, 43, 45, 68)
# Link widths a PCIe slot can give a GPU (gpulab_gpu_pcie_width, gpu_health's pcie_width).
PCIE_WIDTHS = (1, 2, 4, 8, 16, 32)
# Hardware XIDs the GPU metrics carry from the first collection, at 0, so that the first event of a
# kind is an increase an alert sees (NVIDIA's XID catalog: ECC, GSP and NVLink faults, off the bus).
HARDWARE_XIDS = (48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120)
# nvidia-smi exit codes that mean the hardware is at fault, not that checking was impossible.
SMI_HARDWARE_EXITS = {14: "infoROM is corrupted", 15: "a GPU has fallen off the bus"}
SMI_EXITS = {
    6: "the query was unsuccessful",
    9: "the NVIDIA driver is not loaded",
    12: "the NVML library was not found",
    255: "an internal driver error occurred",
}

# What nvidia-smi prints for a value the GPU does not have (ECC on GeForce), and for one it could not read.
_UNSUPPORTED = {"n/a", "[n/a]", "[not supported]", "not supported"}
_MISSING = {"", "[unknown error]", "[insufficient permissions]", *_UNSUPPORTED}
_INT_KEYS = {
    "index",
    "pcie_gen",
    "pcie_gen_max",
    "pcie_width",
    "pcie_width_max",
    "ecc_uncorrected_volatile",
    "ecc_uncorrected_aggregate",
    "ecc_corrected_volatile",
    "retired_sbe",
    "retired_dbe",
    "remap_correctable",
    "remap_uncorrectable",
    "memory",  # MiB, as nvidia-smi prints it
}
_FLOAT_KEYS = {"temperature", "temperature_slowdown", "power_draw", "power_limit"}
_BOOL_KEYS = {"persistence_mode", "retired_pending", "remap_pending", "remap_failure"}
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([^)]+)\): (\d+)(?:, (.*))?")
# A PCI address in a kernel line ("0000:3b:00" or "0000:3b:00.0").
_PCI_ADDRESS = re.compile(r"\b([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?\b")
# The PCI bus: NVIDIA's vendor id, and the classes of a GPU (VGA and 3D controllers; NVSwitches and the
# cards' audio functions are other classes).
NVIDIA_VENDOR = "0x10de"
GPU_PCI_CLASSES = ("0x0300", "0x0302")
# --query-gpu and --query-compute-apps fields for memory held with no process (CSV source).
MEMORY_FIELDS = "pci.bus_id,memory.used,memory.total"
COMPUTE_APP_FIELDS = "gpu_bus_id,pid,used_memory"
MIB = 1024 * 1024


class GpuParseError(ValueError):
    """nvidia-smi output that cannot be read."""


def _value(key: str, raw: str | None) -> Any:
    if raw is None:
        return None
    text = raw.strip()
    if text.lower() in _MISSING:
        return None
    try:
        if key in _INT_KEYS:
            return int(float(text.split()[0].rstrip("x")))
        if key in _FLOAT_KEYS:
            return float(text.split()[0])
        if key in _BOOL_KEYS:
            return {"yes": True, "1": True, "enabled": True, "no": False, "0": False, "disabled": False}[text.lower()]
        if key == "throttle_mask":
            return int(text, 16)
    except (KeyError, ValueError) as exc:
        raise GpuParseError(f"unexpected value {raw!r} for {key}") from exc
    return text


def _ecc_supported(raw: str | None, mode: str | None = None) -> bool | None:
    """True when the GPU counts ECC errors, False when it has none to count (GeForce, or ECC off), None: unknown.

    mode is the XML's ecc_mode/current_ecc when there is one; raw is the uncorrected-errors value.
    """
    if mode is not None and mode.strip().lower() in ("enabled", "disabled", *_UNSUPPORTED):
        return mode.strip().lower() == "enabled"
    if raw is None:
        return None
    text = raw.strip().lower()
    if text in _UNSUPPORTED:
        return False
    return None if text in _MISSING else True


def _split_csv(line: str) -> list[str]:
    return [cell.strip() for cell in line.split(",")]


def parse_query_csv(text: str) -> list[dict[str, Any]]:
    """`nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits` -> one dict per GPU."""
    keys = [field[0] for field in QUERY_FIELDS]
    gpus = []
    for line in text.strip().splitlines():
        if not line.strip():
            continue
        cells = _split_csv(line)
        if len(cells) != len(keys):
            raise GpuParseError(f"expected {len(keys)} comma-separated fields, got {len(cells)}: {line[:80]!r}")
        gpu = {key: _value(key, cell) for key, cell in zip(keys, cells, strict=True)}
        gpu["ecc_supported"] = _ecc_supported(cells[keys.index("ecc_uncorrected_volatile")])
        gpus.append(gpu)
    return gpus


def query_fields(old_names: bool = False) -> str:
    return ",".join(old if old_names else new for _key, new, old in QUERY_FIELDS)


# --query-gpu fields for power limits (gpu_power_limit), in order: the enforced limit and the range
# the GPU allows.
POWER_FIELDS = ("index", "uuid", "power.limit", "power.min_limit", "power.max_limit", "power.default_limit")
_POWER_KEYS = ("index", "uuid", "limit", "min", "max", "default")


def _watts(raw: str) -> float | None:
    text = raw.strip()
    if text.lower() in _MISSING:
        return None
    try:
        return float(text.split()[0])
    except ValueError as exc:
        raise GpuParseError(f"not a power value: {raw!r}") from exc


def parse_power_csv(text: str) -> list[dict[str, Any]]:
    """`nvidia-smi --query-gpu=<POWER_FIELDS> --format=csv,noheader,nounits`
    -> [{index, uuid, limit, min, max, default}]."""
    gpus = []
    for line in text.strip().splitlines():
        cells = _split_csv(line)
        if len(cells) != len(_POWER_KEYS) or not cells[0].isdigit():
            raise GpuParseError(f"expected {len(_POWER_KEYS)} fields starting with the GPU index: {line[:120]!r}")
        watts = {key: _watts(cell) for key, cell in zip(_POWER_KEYS[2:], cells[2:], strict=True)}
        gpus.append({"index": int(cells[0]), "uuid": cells[1], **watts})
    return gpus


def parse_remapped_rows_csv(text: str) -> dict[str, dict[str, Any]]:
    """`nvidia-smi --query-remapped-rows=<REMAP_FIELDS> --format=csv,noheader,nounits` -> by bus id."""
    rows = {}
    for line in text.strip().splitlines():
        if not line.strip():
            continue
        cells = _split_csv(line)
        if len(cells) != 5:
            raise GpuParseError(f"expected 5 remapped-rows fields, got {len(cells)}: {line[:80]!r}")
        bus, corr, unc, pending, failure = cells
        rows[bus.upper()] = {
            "remap_correctable": _value("remap_correctable", corr),
            "remap_uncorrectable": _value("remap_uncorrectable", unc),
            "remap_pending": _value("remap_pending", pending),
            "remap_failure": _value("remap_failure", failure),
        }
    return rows


def _text(node: ET.Element, path: str) -> str | None:
    found = node.find(path)
    return found.text if found is not None and found.text is not None else None


def _first(node: ET.Element, *paths: str) -> str | None:
    for path in paths:
        value = _text(node, path)
        if value is not None:
            return value
    return None


def _throttle_from_xml(gpu: ET.Element) -> int | None:
    reasons = gpu.find("clocks_event_reasons")
    prefix = "clocks_event_reason_"
    if reasons is None:
        reasons, prefix = gpu.find("clocks_throttle_reasons"), "clocks_throttle_reason_"
    if reasons is None:
        return None
    mask = 0
    for bit, name in THROTTLE_BITS.items():
        if (_text(reasons, prefix + name) or "").strip() == "Active":
            mask |= bit
    return mask


def _slowdown_from_tlimit(gpu: ET.Element) -> float | None:
    """Drivers 545+ on Hopper give degrees left to T.Limit and the slowdown point relative to it.

    With the GPU at 33 C, 54 C left to T.Limit and slowdown at -2 C past it, slowdown is 89 C
    (what NVML's slowdown threshold says for the same GPU).
    """
    temps = [
        _value("temperature", _text(gpu, f"temperature/{name}"))
        for name in ("gpu_temp", "gpu_temp_tlimit", "gpu_temp_slow_tlimit_threshold")
    ]
    if None in temps:
        return None
    current, to_limit, slow_past_limit = temps
    return current + to_limit - slow_past_limit


def parse_query_xml(text: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """`nvidia-smi -q -x` -> (one dict per GPU, {driver_version, cuda_version})."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise GpuParseError(f"nvidia-smi XML does not parse: {exc}") from exc
    if root.tag != "nvidia_smi_log":
        raise GpuParseError(f"expected <nvidia_smi_log>, found <{root.tag}>")
    driver = _text(root, "driver_version")
    info = {"driver_version": driver, "cuda_version": _text(root, "cuda_version")}
    gpus = []
    for position, gpu in enumerate(root.findall("gpu")):
        raw = {
            "index": _text(gpu, "minor_number") or str(position),
            "uuid": _text(gpu, "uuid"),
            "name": _text(gpu, "product_name"),
            "bus_id": gpu.get("id"),
            "driver_version": driver,
            "persistence_mode": _text(gpu, "persistence_mode"),
            "temperature": _text(gpu, "temperature/gpu_temp"),
            "temperature_slowdown": _text(gpu, "temperature/gpu_temp_slow_threshold"),
            "power_draw": _first(
                gpu,
                "gpu_power_readings/power_draw",
                "gpu_power_readings/average_power_draw",  # driver 545 and later
                "power_readings/power_draw",
            ),
            "power_limit": _first(
                gpu,
                "gpu_power_readings/current_power_limit",
                "power_readings/power_limit",
                "power_readings/enforced_power_limit",
            ),
            "pcie_gen": _text(gpu, "pci/pci_gpu_link_info/pcie_gen/current_link_gen"),
            "pcie_gen_max": _text(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen"),
            "pcie_width": _text(gpu, "pci/pci_gpu_link_info/link_widths/current_link_width"),
            "pcie_width_max": _text(gpu, "pci/pci_gpu_link_info/link_widths/max_link_width"),
            "ecc_uncorrected_volatile": _first(
                gpu, "ecc_errors/volatile/dram_uncorrectable", "ecc_errors/volatile/double_bit/total"
            ),
            "ecc_uncorrected_aggregate": _first(
                gpu, "ecc_errors/aggregate/dram_uncorrectable", "ecc_errors/aggregate/double_bit/total"
            ),
            "ecc_corrected_volatile": _first(
                gpu, "ecc_errors/volatile/dram_correctable", "ecc_errors/volatile/single_bit/total"
            ),
            "retired_pending": _first(gpu, "retired_pages/pending_retirement", "retired_pages/pending_blacklist"),
            "retired_sbe": _text(gpu, "retired_pages/multiple_single_bit_retirement/retired_count"),
            "retired_dbe": _text(gpu, "retired_pages/double_bit_retirement/retired_count"),
            "remap_correctable": _text(gpu, "remapped_rows/remapped_row_corr"),
            "remap_uncorrectable": _text(gpu, "remapped_rows/remapped_row_unc"),
            "remap_pending": _text(gpu, "remapped_rows/remapped_row_pending"),
            "remap_failure": _text(gpu, "remapped_rows/remapped_row_failure"),
        }
        parsed = {key: _value(key, value) for key, value in raw.items()}
        parsed["ecc_supported"] = _ecc_supported(raw["ecc_uncorrected_volatile"], _text(gpu, "ecc_mode/current_ecc"))
        parsed["throttle_mask"] = _throttle_from_xml(gpu)
        for key, path in (("memory_used", "fb_memory_usage/used"), ("memory_total", "fb_memory_usage/total")):
            mib = _value("memory", _text(gpu, path))
            parsed[key] = None if mib is None else mib * MIB
        parsed["processes"] = None if gpu.find("processes") is None else len(gpu.findall("processes/process_info"))
        if parsed["temperature_slowdown"] is None:
            parsed["temperature_slowdown"] = _slowdown_from_tlimit(gpu)
        gpus.append(parsed)
    return gpus, info


def parse_nvlink_status(text: str) -> dict[int, dict[str, Any]]:
    """`nvidia-smi nvlink --status` -> {gpu index: {links, inactive}}; empty output means no NVLink."""
    result: dict[int, dict[str, Any]] = {}
    current: int | None = None
    for line in text.splitlines():
        if m := re.match(r"^GPU (\d+):", line):
            current = int(m.group(1))
            result[current] = {"links": 0, "inactive": []}
        elif current is not None and (m := re.match(r"^\s+Link (\d+): (.*)$", line)):
            result[current]["links"] += 1
            if "inactive" in m.group(2).lower():
                result[current]["inactive"].append(int(m.group(1)))
        elif current is not None and "all links are inactive" in line:
            result[current]["all_inactive"] = True
    return result


def parse_xids(log: str) -> list[dict[str, Any]]:
    """NVRM Xid lines from the kernel log -> [{code, bus, detail, line}]."""
    events = []
    for line in log.splitlines():
        if m := _XID.search(line):
            events.append(
                {"bus": m.group(1), "code": int(m.group(2)), "detail": (m.group(3) or "").strip(), "line": line.strip()}
            )
    return events


def parse_bus_drops(log: str) -> list[dict[str, Any]]:
    """Kernel log lines saying a GPU "has fallen off the bus" (with or without an Xid 79) -> [{bus, line}]."""
    drops = []
    for line in log.splitlines():
        if "fallen off the bus" in line.lower():
            m = _PCI_ADDRESS.search(line)
            drops.append({"bus": kernel_bus_id(m.group(1)) if m else None, "line": line.strip()})
    return drops


def nvidia_pci_gpus(devices: list[tuple[str, str, str]]) -> list[str]:
    """(sysfs device name, vendor, class) of each PCI device -> the NVIDIA GPUs' addresses, sorted."""
    return sorted(
        kernel_bus_id(name)
        for name, vendor, pci_class in devices
        if vendor.strip().lower() == NVIDIA_VENDOR and pci_class.strip().lower()[:6] in GPU_PCI_CLASSES
    )


def merge_memory(gpus: list[dict[str, Any]], memory_csv: str, apps_csv: str) -> None:
    """Add memory_used/memory_total (bytes) and processes (a count) from the CSV source's two extra queries.

    memory_csv: `--query-gpu=MEMORY_FIELDS`; apps_csv: `--query-compute-apps=COMPUTE_APP_FIELDS`, both
    `--format=csv,noheader,nounits` (MiB). Output of another shape adds nothing: the memory check then
    does not run, and the GPUs' other checks stand.
    """
    try:
        memory = {}
        for line in memory_csv.strip().splitlines():
            bus, used, total = _split_csv(line)
            memory[kernel_bus_id(bus)] = (_value("memory", used), _value("memory", total))
        apps: dict[str, int] = {}
        for line in apps_csv.strip().splitlines():
            bus = kernel_bus_id(_split_csv(line)[0])
            apps[bus] = apps.get(bus, 0) + 1
    except (ValueError, GpuParseError):
        return
    for gpu in gpus:
        bus = kernel_bus_id(gpu["bus_id"]) if gpu.get("bus_id") else None
        if bus in memory:
            used, total = memory[bus]
            gpu["memory_used"] = None if used is None else used * MIB
            gpu["memory_total"] = None if total is None else total * MIB
            gpu["processes"] = apps.get(bus, 0)


def kernel_bus_id(bus_id: str) -> str:
    """A PCI address as the kernel's NVRM lines and sysfs name it ("0000:c1:00"), from NVML's and nvidia-smi's
    "00000000:C1:00.0" or the kernel's own forms: the one key GPUs are matched by across sources."""
    domain, bus, device = bus_id.split(".", 1)[0].split(":")
    return f"{int(domain, 16):04x}:{bus.lower()}:{device.lower()}"


def throttle_reasons(mask: int | None) -> list[str]:
    if mask is None:
        return []
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]


def merge_remapped_rows(gpus: list[dict[str, Any]], remap: dict[str, dict[str, Any]]) -> None:
    """Add remapped-rows values to the GPUs (matched by bus id; nvidia-smi pads domains differently)."""

    def tail(bus: str | None) -> str:
        return (bus or "").upper().split(":", 1)[-1]

    by_tail = {tail(bus): values for bus, values in remap.items()}
    for gpu in gpus:
        if values := by_tail.get(tail(gpu.get("bus_id"))):
            gpu.update(values)


# The inventory variable the power limits come from, named in the power limit checks.
POWER_LIMITS_VARIABLE = "nvidia_driver_power_limits"


@dataclass(frozen=True)
class Limits:
    """What one node's GPUs are held to: the inventory's declarations and the thresholds."""

    expected_model: str | None = None
    driver_version: str | None = None
    ecc_corrected_max: int = 20_000_000
    remap_uncorrectable_max: int = 512
    retired_pages_max: int = 62
    temperature_margin_c: float = 5.0
    temperature_max_c: float = 85.0
    check_pcie_gen: bool = False
    # The PCIe width the slot gives (x8 on a two-GPU consumer board); None holds each GPU to its own maximum.
    pcie_width: int | None = None
    require_persistence: bool = True
    # nvidia_driver_power_limits as the inventory has it (watts by index, UUID or `all`); empty checks none.
    power_limits: Mapping[Any, Any] = field(default_factory=dict)
    # Memory a GPU may hold while no process runs on it (a desktop's display server holds a few hundred MiB).
    memory_held_max_mib: int = 1024


def evaluate(
    gpus: list[dict[str, Any]] | None,
    *,
    source: str,
    expected_count: int | None = None,
    limits: Limits = Limits(),
    nvlink: dict[int, dict[str, Any]] | None = None,
    xids: list[dict[str, Any]] | None = None,
    xid_ignore: tuple[int, ...] = APPLICATION_XIDS,
    bus_drops: list[dict[str, Any]] | None = None,
    pci_gpus: list[str] | None = None,
    unavailable_reason: str | None = None,
) -> list[Check]:
    """Check records for one node. gpus=None means they could not be read (see unavailable_reason).

    What the inventory declares (expected_count, driver_version) and cannot be read fails: a node
    declared with GPUs whose driver is missing is broken, not "unchecked". pci_gpus: the NVIDIA GPUs
    on the PCI bus (None: not read); one the driver does not list fails. bus_drops: parse_bus_drops
    of the kernel log (None: not read).
    """
    checks: list[Check] = [] if bus_drops is None else [_bus_drop_check(bus_drops)]
    if gpus is None:
        reason = unavailable_reason or "GPUs could not be queried"
        if pci_gpus:
            reason += f" ({len(pci_gpus)} NVIDIA GPU(s) on the PCI bus: {', '.join(pci_gpus)})"
        return _unreadable(reason, expected_count, limits.driver_version) + checks
    if expected_count is not None:
        if len(gpus) == expected_count:
            checks.append(
                passed("gpu_count", f"{len(gpus)} GPUs as expected", value=len(gpus), threshold=expected_count)
            )
        else:
            checks.append(
                failed(
                    "gpu_count",
                    f"{len(gpus)} GPUs found via {source}, {expected_count} expected",
                    value=len(gpus),
                    threshold=expected_count,
                    code="GPU_MISSING",
                )
            )
    for gpu in gpus:
        checks += [record for check in GPU_CHECKS for record in check(gpu, f"gpu{gpu.get('index')}", limits)]
    checks += _power_limit_checks(gpus, limits.power_limits)
    if pci_gpus is not None:
        checks.append(_pci_check(gpus, pci_gpus, source))
    if nvlink is not None:
        checks += _nvlink_checks(nvlink)
    if xids is not None:
        checks.append(_xid_check(xids, xid_ignore))
    return checks


def _unreadable(reason: str, expected_count: int | None, driver_version: str | None) -> list[Check]:
    declared = []
    if expected_count is not None:
        declared.append(
            failed(
                "gpu_count",
                f"{expected_count} GPUs declared, none could be read: {reason}",
                value=0,
                threshold=expected_count,
                code="GPU_MISSING",
            )
        )
    if driver_version:
        declared.append(
            failed(
                "driver",
                f"driver {driver_version} pinned, none answers: {reason}",
                threshold=driver_version,
                code="DRIVER_MISSING",
            )
        )
    if declared:
        return declared
    return [unavailable("gpu_query", f"{reason}: nothing to check, and no GPU declared here", code="GPU_UNAVAILABLE")]


def _missing(gpu: dict[str, Any], g: str, check: str, what: str) -> Check:
    return unavailable(f"{g}.{check}", f"{what} not reported by this GPU ({gpu.get('name')})")


def _model(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    if not limits.expected_model:
        return []
    name = gpu.get("name") or ""
    if limits.expected_model in name:
        return [passed(f"{g}.model", f"{name}", value=name, threshold=limits.expected_model)]
    return [
        failed(
            f"{g}.model",
            f"model {name!r}, expected {limits.expected_model!r}",
            value=name,
            threshold=limits.expected_model,
            code="GPU_MODEL",
        )
    ]


def _driver(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    pin = limits.driver_version
    if not pin:
        return []
    found = gpu.get("driver_version") or ""
    if found == pin or found.startswith(pin + "."):
        return [passed(f"{g}.driver", f"driver {found}", value=found, threshold=pin)]
    return [failed(f"{g}.driver", f"driver {found}, pinned {pin}", value=found, threshold=pin, code="DRIVER_MISMATCH")]


def _ecc(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    out: list[Check] = []
    unc = gpu.get("ecc_uncorrected_volatile")
    if unc is not None:
        out.append(at_most(f"{g}.ecc_uncorrected", unc, 0, "errors", "uncorrectable ECC errors since driver load"))
    elif gpu.get("ecc_supported") is False:
        out.append(not_applicable(f"{g}.ecc_uncorrected", f"no ECC on this GPU, or ECC turned off ({gpu.get('name')})"))
    else:
        out.append(_missing(gpu, g, "ecc_uncorrected", "ECC"))
    corr = gpu.get("ecc_corrected_volatile")
    if corr is not None:
        out.append(at_most(f"{g}.ecc_corrected", corr, limits.ecc_corrected_max, "errors", "correctable ECC errors"))
    return out


def _row_remap(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    if gpu.get("remap_pending") is None and gpu.get("remap_failure") is None:
        return []
    most = limits.remap_uncorrectable_max
    if gpu.get("remap_failure"):
        return [
            failed(f"{g}.row_remap", "row remapping failed: replace the GPU", value="failure", code="ROW_REMAP_FAILURE")
        ]
    if gpu.get("remap_pending"):
        return [
            failed(
                f"{g}.row_remap",
                "row remap pending: reset the GPU (or reboot)",
                value="pending",
                code="ROW_REMAP_PENDING",
            )
        ]
    if (gpu.get("remap_uncorrectable") or 0) > most:
        return [
            failed(
                f"{g}.row_remap",
                f"{gpu['remap_uncorrectable']} uncorrectable remapped rows",
                value=gpu["remap_uncorrectable"],
                threshold=most,
                code="ROW_REMAP_COUNT",
            )
        ]
    return [
        passed(f"{g}.row_remap", "no remap pending or failed", value=gpu.get("remap_uncorrectable"), threshold=most)
    ]


def _retired_pages(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    retired = [gpu.get("retired_sbe"), gpu.get("retired_dbe")]
    if gpu.get("retired_pending"):
        return [failed(f"{g}.retired_pages", "page retirement pending: reboot to retire", code="RETIRED_PENDING")]
    if any(v is not None for v in retired):
        total = sum(v or 0 for v in retired)
        return [at_most(f"{g}.retired_pages", total, limits.retired_pages_max, "pages", "retired pages")]
    return []


def _throttle(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    mask = gpu.get("throttle_mask")
    if mask is None:
        return [_missing(gpu, g, "throttle", "clock event reasons")]
    reasons = throttle_reasons(mask)
    if bad := THROTTLE_FAIL.intersection(reasons):
        return [
            failed(
                f"{g}.throttle",
                f"hardware slowdown active: {', '.join(sorted(bad))}",
                value=hex(mask),
                code="GPU_HW_SLOWDOWN",
            )
        ]
    if warn := THROTTLE_WARN.intersection(reasons):
        return [warned(f"{g}.throttle", f"throttled: {', '.join(sorted(warn))}", value=hex(mask))]
    return [passed(f"{g}.throttle", f"no slowdown ({', '.join(reasons) or 'none active'})", value=hex(mask))]


def _pcie_width(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    """The link against what the slot gives where the operator declares it, else against the card's maximum."""
    width, width_max = gpu.get("pcie_width"), gpu.get("pcie_width_max")
    if width is None or width_max is None:
        return [_missing(gpu, g, "pcie_width", "PCIe link width")]
    wanted = min(limits.pcie_width, width_max) if limits.pcie_width else width_max
    if width >= wanted:
        slot = f" (the slot gives x{limits.pcie_width}; the GPU could do x{width_max})" if width < width_max else ""
        return [passed(f"{g}.pcie_width", f"PCIe x{width}{slot}", value=width, threshold=wanted)]
    where = f"the slot gives x{limits.pcie_width}" if limits.pcie_width else f"capable of x{width_max}"
    return [
        failed(
            f"{g}.pcie_width",
            f"PCIe link x{width}, {where}: reseat or check the slot",
            value=width,
            threshold=wanted,
            code="PCIE_DOWNTRAINED",
        )
    ]


def _pcie_gen(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    gen, gen_max = gpu.get("pcie_gen"), gpu.get("pcie_gen_max")
    if not limits.check_pcie_gen or gen is None or gen_max is None:
        return []
    if gen >= gen_max:
        return [passed(f"{g}.pcie_gen", f"PCIe gen {gen}", value=gen, threshold=gen_max)]
    return [
        failed(
            f"{g}.pcie_gen",
            f"PCIe gen {gen} under load, capable of {gen_max}",
            value=gen,
            threshold=gen_max,
            code="PCIE_GEN",
        )
    ]


def _persistence(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    if gpu.get("persistence_mode") is None:
        return [_missing(gpu, g, "persistence", "persistence mode")]
    if gpu["persistence_mode"]:
        return [passed(f"{g}.persistence", "persistence mode enabled", value="Enabled")]
    if not limits.require_persistence:
        return []
    return [
        warned(
            f"{g}.persistence",
            "persistence mode disabled: enable nvidia-persistenced",
            value="Disabled",
            threshold="Enabled",
        )
    ]


def _temperature(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    """Against the GPU's own slowdown temperature less a margin where it reports one, else a fixed limit."""
    temp, slowdown = gpu.get("temperature"), gpu.get("temperature_slowdown")
    if temp is None:
        return [_missing(gpu, g, "temperature", "temperature")]
    if slowdown is not None:
        limit = slowdown - limits.temperature_margin_c
        ok, message = temp < limit, f"{temp:g} C, slowdown at {slowdown:g} C"
        hot = f"{temp:g} C is within {limits.temperature_margin_c:g} C of slowdown at {slowdown:g} C"
    else:
        limit = limits.temperature_max_c
        ok, message, hot = temp <= limit, f"{temp:g} C", f"{temp:g} C above {limit:g} C"
    if ok:
        return [passed(f"{g}.temperature", message, value=temp, threshold=limit, unit="C")]
    return [warned(f"{g}.temperature", hot, value=temp, threshold=limit, unit="C", code="GPU_HOT")]


def _power(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    draw, limit_w = gpu.get("power_draw"), gpu.get("power_limit")
    if draw is None or limit_w is None:
        return [_missing(gpu, g, "power", "power draw or limit")]
    if draw <= limit_w:
        return [passed(f"{g}.power", f"{draw:g} W of {limit_w:g} W", value=draw, threshold=limit_w, unit="W")]
    return [
        warned(
            f"{g}.power",
            f"drawing {draw:g} W over its {limit_w:g} W limit",
            value=draw,
            threshold=limit_w,
            unit="W",
            code="GPU_POWER",
        )
    ]


def _power_limit_checks(gpus: list[dict[str, Any]], wanted: Mapping[Any, Any]) -> list[Check]:
    """Each GPU's enforced power limit against the one the inventory asks: a GPU left at its default
    (the boot unit failed, a GPU was swapped) draws more than its circuit and UPS were sized for."""
    if not wanted:
        return []
    targets, problems = gpu_power.resolve(gpus, wanted, POWER_LIMITS_VARIABLE)
    checks = [failed("power_limits", problem, code="GPU_POWER_LIMIT") for problem in problems]
    by_index = {gpu["index"]: gpu for gpu in gpus}
    for index, (name, watts) in sorted(targets.items()):
        gpu, g = by_index[index], f"gpu{index}"
        limit = gpu.get("power_limit")
        if limit is None:
            checks.append(_missing(gpu, g, "power_limit", "the enforced power limit"))
        elif abs(limit - watts) <= gpu_power.TOLERANCE_W:
            checks.append(
                passed(f"{g}.power_limit", f"{limit:g} W as {name} asks", value=limit, threshold=watts, unit="W")
            )
        else:
            checks.append(
                failed(
                    f"{g}.power_limit",
                    f"{limit:g} W where {name} asks {watts:g} W: gpulab-gpu-power.service did not set it at boot,"
                    " or something reset it; run the nvidia_driver role (tasks_from: power)",
                    value=limit,
                    threshold=watts,
                    unit="W",
                    code="GPU_POWER_LIMIT",
                )
            )
    return checks


# Each GPU's checks, in the report's order.
def _memory_held(gpu: dict[str, Any], g: str, limits: Limits) -> list[Check]:
    """Memory in use with no process on the GPU: a job that died and left its memory, or a process the
    node cannot see (another PID namespace). Only where the source lists processes."""
    used, processes = gpu.get("memory_used"), gpu.get("processes")
    if used is None or processes is None:
        return []
    mib = used // MIB
    if processes == 0 and mib > limits.memory_held_max_mib:
        return [
            warned(
                f"{g}.memory_held",
                f"{mib} MiB of GPU memory in use with no process on the GPU: memory left by a job that died, or "
                "a process in a container; check `nvidia-smi --query-compute-apps=pid,used_memory` and "
                "`fuser -v /dev/nvidia*`, then reset the GPU (`nvidia-smi -r`) while it is idle",
                value=mib,
                threshold=limits.memory_held_max_mib,
                unit="MiB",
                code="GPU_MEMORY_HELD",
            )
        ]
    return [passed(f"{g}.memory_held", f"{mib} MiB in use by {processes} process(es)", value=mib, unit="MiB")]


GPU_CHECKS = (
    _model,
    _driver,
    _ecc,
    _row_remap,
    _retired_pages,
    _throttle,
    _pcie_width,
    _pcie_gen,
    _persistence,
    _temperature,
    _power,
    _memory_held,
)


def _nvlink_checks(nvlink: dict[int, dict[str, Any]]) -> list[Check]:
    if not nvlink:
        return [passed("nvlink", "no NVLink on this node", value=0)]
    out = []
    for index, state in sorted(nvlink.items()):
        down = state.get("inactive", [])
        if state.get("all_inactive") or down:
            what = "all links" if state.get("all_inactive") else f"links {down}"
            out.append(
                failed(
                    f"gpu{index}.nvlink", f"NVLink {what} inactive", value=len(down), threshold=0, code="NVLINK_DOWN"
                )
            )
        else:
            out.append(passed(f"gpu{index}.nvlink", f"{state['links']} NVLink links active", value=state["links"]))
    return out


def _xid_check(xids: list[dict[str, Any]], ignore: tuple[int, ...]) -> Check:
    hardware = [x for x in xids if x["code"] not in ignore]
    if hardware:
        codes = sorted({x["code"] for x in hardware})
        return failed(
            "xid",
            f"{len(hardware)} hardware XID event(s), codes {codes}; last: {hardware[-1]['line']}",
            value=len(hardware),
            threshold=0,
            code="GPU_XID",
        )
    app = sorted({x["code"] for x in xids})
    note = f" (application XIDs {app} ignored)" if app else ""
    return passed("xid", f"no hardware XID errors in the kernel log{note}", value=0, threshold=0)


def _bus_drop_check(drops: list[dict[str, Any]]) -> Check:
    if drops:
        buses = sorted({d["bus"] or "unknown address" for d in drops})
        return failed(
            "gpu_bus",
            f"the kernel log says a GPU has fallen off the bus ({', '.join(buses)}): {drops[-1]['line']}; "
            "drain the node, check the GPU's power cables, seating and temperature, then reboot (a GPU reset "
            "rarely brings it back)",
            value=len(drops),
            threshold=0,
            code="GPU_FELL_OFF_BUS",
        )
    return passed("gpu_bus", "no GPU has fallen off the bus since boot", value=0, threshold=0)


def _pci_check(gpus: list[dict[str, Any]], pci_gpus: list[str], source: str) -> Check:
    """Every NVIDIA GPU on the PCI bus is one the driver lists."""
    listed = {kernel_bus_id(g["bus_id"]) for g in gpus if g.get("bus_id")}
    lost = [bus for bus in pci_gpus if bus not in listed]
    if lost:
        return failed(
            "gpu_pci",
            f"{len(lost)} NVIDIA GPU(s) on the PCI bus that {source} does not list: {', '.join(lost)}; the driver "
            "lost or never initialised them: look for NVRM lines in `journalctl -k`, check power and seating, "
            "then reboot",
            value=len(pci_gpus),
            threshold=len(listed),
            code="GPU_NOT_IN_DRIVER",
        )
    if listed and not pci_gpus:
        return unavailable(
            "gpu_pci", f"{source} lists {len(listed)} GPU(s) the PCI bus here does not show (a container hides it?)"
        )
    return passed(
        "gpu_pci", f"{len(pci_gpus)} NVIDIA GPU(s) on the PCI bus, each listed by {source}", value=len(pci_gpus)
    )


def collect_nvml(nvml: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read the same values through NVML (the `pynvml` module of nvidia-ml-py, passed in)."""
    nvml.nvmlInit()
    try:
        driver = _decode(nvml.nvmlSystemGetDriverVersion())
        gpus = []
        for index in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(index)

            def get(fn: str, *args: Any, handle: Any = h) -> Any:
                try:
                    return getattr(nvml, fn)(handle, *args)
                except nvml.NVMLError:
                    return None

            gpu: dict[str, Any] = {
                "index": index,
                "uuid": _decode(get("nvmlDeviceGetUUID")),
                "name": _decode(get("nvmlDeviceGetName")),
                "bus_id": _decode(getattr(get("nvmlDeviceGetPciInfo"), "busId", None)),
                "driver_version": driver,
                "persistence_mode": None if (pm := get("nvmlDeviceGetPersistenceMode")) is None else bool(pm),
                "temperature": _num(get("nvmlDeviceGetTemperature", nvml.NVML_TEMPERATURE_GPU)),
                "temperature_slowdown": _num(
                    get("nvmlDeviceGetTemperatureThreshold", nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
                ),
                "power_draw": _milli(get("nvmlDeviceGetPowerUsage")),
                "power_limit": _milli(get("nvmlDeviceGetEnforcedPowerLimit")),
                "pcie_gen": get("nvmlDeviceGetCurrPcieLinkGeneration"),
                "pcie_gen_max": get("nvmlDeviceGetMaxPcieLinkGeneration"),
                "pcie_width": get("nvmlDeviceGetCurrPcieLinkWidth"),
                "pcie_width_max": get("nvmlDeviceGetMaxPcieLinkWidth"),
                "clock_sm": get("nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_SM),
                "clock_memory": get("nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_MEM),
                "memory_used": getattr(memory := _nvml_memory(nvml, h), "used", None),
                "memory_total": getattr(memory, "total", None),
                "processes": _nvml_processes(nvml, h),
                # Percent of the last sample period a kernel ran / memory was busy; fan speed in percent of
                # its maximum (None on passively cooled GPUs); energy in mJ since the driver loaded (Volta on).
                "utilization_gpu": getattr(busy := get("nvmlDeviceGetUtilizationRates"), "gpu", None),
                "utilization_memory": getattr(busy, "memory", None),
                "fan_speed": get("nvmlDeviceGetFanSpeed"),
                "energy_total": _milli(get("nvmlDeviceGetTotalEnergyConsumption")),
                "throttle_mask": get("nvmlDeviceGetCurrentClocksEventReasons")
                if hasattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons")
                else get("nvmlDeviceGetCurrentClocksThrottleReasons"),
                "ecc_uncorrected_volatile": get(
                    "nvmlDeviceGetTotalEccErrors", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC
                ),
                "ecc_uncorrected_aggregate": get(
                    "nvmlDeviceGetTotalEccErrors", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_AGGREGATE_ECC
                ),
                "ecc_corrected_volatile": get(
                    "nvmlDeviceGetTotalEccErrors", nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_VOLATILE_ECC
                ),
                "ecc_supported": _nvml_ecc_supported(nvml, h),
                "retired_pending": None,
                "retired_sbe": None,
                "retired_dbe": None,
            }
            remap = get("nvmlDeviceGetRemappedRows")
            if remap is not None:
                corr, unc, pending, failure = remap
                gpu.update(
                    remap_correctable=corr,
                    remap_uncorrectable=unc,
                    remap_pending=bool(pending),
                    remap_failure=bool(failure),
                )
            gpus.append(gpu)
        return gpus, {"driver_version": driver}
    finally:
        nvml.nvmlShutdown()


def _nvml_memory(nvml: Any, handle: Any) -> Any:
    """Frame buffer memory with the driver's reserved part left out of `used` (as nvidia-smi shows it: an idle
    H200 reads 0 MiB, where the first version of the call says 615 MiB); the first version where that is all."""
    try:
        return nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
    except (AttributeError, TypeError, nvml.NVMLError):  # bindings or drivers without the second version
        try:
            return nvml.nvmlDeviceGetMemoryInfo(handle)
        except nvml.NVMLError:
            return None


def _nvml_processes(nvml: Any, handle: Any) -> int | None:
    """Compute and graphics processes on the GPU; None when NVML cannot list them."""
    try:
        return len(nvml.nvmlDeviceGetComputeRunningProcesses(handle)) + len(
            nvml.nvmlDeviceGetGraphicsRunningProcesses(handle)
        )
    except (nvml.NVMLError, AttributeError):  # AttributeError: bindings without these calls
        return None


def _nvml_ecc_supported(nvml: Any, handle: Any) -> bool | None:
    """ECC enabled (True), not supported or off (False), or unknown (None), through NVML."""
    try:
        current, _pending = nvml.nvmlDeviceGetEccMode(handle)
    except getattr(nvml, "NVMLError_NotSupported", ()):
        return False
    except nvml.NVMLError:
        return None
    return bool(current)


def _decode(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _num(value: Any) -> float | None:
    return None if value is None else float(value)


def _milli(value: Any) -> float | None:
    return None if value is None else round(value / 1000.0, 2)
