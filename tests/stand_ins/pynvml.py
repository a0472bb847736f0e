"""A stand-in for nvidia-ml-py's `pynvml`: the calls gpulab's collectors make, answered from a JSON file.

GPULAB_NVML_STAND_IN names the file (tests/stand_ins/nvml-two-gpus.json is an example). A GPU whose
"ecc" is null raises NVMLError_NotSupported for ECC, as GeForce does, and one whose "fan" is null for the
fan speed, as a passively cooled datacenter GPU does; "init_error" makes nvmlInit fail
as it does on a node without a driver ("LibraryNotFound", "DriverNotLoaded").
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

NVML_TEMPERATURE_GPU = 0
NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
nvmlMemory_v2 = 0x02000028  # noqa: N816 - pynvml's name: the version of the memory struct that reports reserved apart


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - pynvml's name
    pass


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801
    pass


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801
    pass


_state: dict = {}


def _gpu(handle: int) -> dict:
    return _state["gpus"][handle]


def nvmlInit() -> None:  # noqa: N802 - pynvml's names
    with open(os.environ["GPULAB_NVML_STAND_IN"], encoding="utf-8") as handle:
        _state.update(json.load(handle))
    if _state.get("init_error"):
        raise globals()[f"NVMLError_{_state['init_error']}"]()


def nvmlShutdown() -> None:  # noqa: N802
    _state.clear()


def nvmlSystemGetDriverVersion() -> str:  # noqa: N802
    return _state["driver"]


def nvmlDeviceGetCount() -> int:  # noqa: N802
    return len(_state["gpus"])


def nvmlDeviceGetHandleByIndex(index: int) -> int:  # noqa: N802
    return index


def nvmlDeviceGetUUID(h: int) -> str:  # noqa: N802
    return _gpu(h)["uuid"]


def nvmlDeviceGetName(h: int) -> str:  # noqa: N802
    return _gpu(h)["name"]


def nvmlDeviceGetPciInfo(h: int) -> SimpleNamespace:  # noqa: N802
    return SimpleNamespace(busId=_gpu(h)["bus_id"])


def nvmlDeviceGetPersistenceMode(h: int) -> int:  # noqa: N802
    return _gpu(h)["persistence"]


def nvmlDeviceGetTemperature(h: int, sensor: int) -> int:  # noqa: N802
    return _gpu(h)["temperature"]


def nvmlDeviceGetTemperatureThreshold(h: int, kind: int) -> int:  # noqa: N802
    return _gpu(h)["slowdown"]


def nvmlDeviceGetPowerUsage(h: int) -> int:  # noqa: N802
    return _gpu(h)["power_mw"]


def nvmlDeviceGetEnforcedPowerLimit(h: int) -> int:  # noqa: N802
    return _gpu(h)["limit_mw"]


def nvmlDeviceGetCurrPcieLinkGeneration(h: int) -> int:  # noqa: N802
    return _gpu(h)["pcie"]["gen"]


def nvmlDeviceGetMaxPcieLinkGeneration(h: int) -> int:  # noqa: N802
    return _gpu(h)["pcie"]["gen_max"]


def nvmlDeviceGetCurrPcieLinkWidth(h: int) -> int:  # noqa: N802
    return _gpu(h)["pcie"]["width"]


def nvmlDeviceGetMaxPcieLinkWidth(h: int) -> int:  # noqa: N802
    return _gpu(h)["pcie"]["width_max"]


def nvmlDeviceGetClockInfo(h: int, clock: int) -> int:  # noqa: N802
    return _gpu(h)["clocks"]["sm" if clock == NVML_CLOCK_SM else "memory"]


def nvmlDeviceGetMemoryInfo(h: int, version: int | None = None) -> SimpleNamespace:  # noqa: N802
    """A GPU's "memory": {"total", "used" (by processes), "reserved" (by the driver, 0 when absent)}. The first
    version of the call counts the reserved memory as used, as NVML does; nvmlMemory_v2 reports it apart."""
    memory = _gpu(h)["memory"]
    total, used, reserved = memory["total"], memory["used"], memory.get("reserved", 0)
    if version is None:
        return SimpleNamespace(total=total, used=used + reserved, free=total - used - reserved)
    return SimpleNamespace(total=total, reserved=reserved, used=used, free=total - used - reserved)


def _processes(h: int, kind: str) -> list[SimpleNamespace]:
    """A GPU's "processes": {"compute": [[pid, bytes], ...], "graphics": [...]}; none when absent."""
    return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in _gpu(h).get("processes", {}).get(kind, [])]


def nvmlDeviceGetComputeRunningProcesses(h: int) -> list[SimpleNamespace]:  # noqa: N802
    return _processes(h, "compute")


def nvmlDeviceGetGraphicsRunningProcesses(h: int) -> list[SimpleNamespace]:  # noqa: N802
    return _processes(h, "graphics")


def nvmlDeviceGetCurrentClocksEventReasons(h: int) -> int:  # noqa: N802
    return _gpu(h)["clocks_event_mask"]


def nvmlDeviceGetUtilizationRates(h: int) -> SimpleNamespace:  # noqa: N802
    return SimpleNamespace(**_gpu(h)["utilization"])


def nvmlDeviceGetFanSpeed(h: int) -> int:  # noqa: N802
    if _gpu(h)["fan"] is None:  # a passively cooled GPU
        raise NVMLError_NotSupported()
    return _gpu(h)["fan"]


def nvmlDeviceGetTotalEnergyConsumption(h: int) -> int:  # noqa: N802
    return _gpu(h)["energy_mj"]


def _ecc(h: int) -> dict:
    if _gpu(h)["ecc"] is None:
        raise NVMLError_NotSupported()
    return _gpu(h)["ecc"]


def nvmlDeviceGetEccMode(h: int) -> tuple[int, int]:  # noqa: N802
    mode = _ecc(h)["mode"]
    return mode, mode


def nvmlDeviceGetTotalEccErrors(h: int, kind: int, counter: int) -> int:  # noqa: N802
    corrected = kind == NVML_MEMORY_ERROR_TYPE_CORRECTED
    name = ("corrected_" if corrected else "uncorrected_") + (
        "volatile" if counter == NVML_VOLATILE_ECC else "aggregate"
    )
    return _ecc(h)[name]


def nvmlDeviceGetRemappedRows(h: int) -> tuple[int, int, int, int]:  # noqa: N802
    if _gpu(h)["remap"] is None:
        raise NVMLError_NotSupported()
    return tuple(_gpu(h)["remap"])
