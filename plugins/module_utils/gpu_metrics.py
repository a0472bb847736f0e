"""GPU metrics in Prometheus's text format for node exporter's textfile collector, as pure functions.

The values are the normalised GPU records of `nvidia_smi.collect_nvml` (the same gpu_health judges);
a value the GPU does not report (None: ECC on GeForce) is left out, never written as 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.nvidia_smi import (
    HARDWARE_XIDS,
    THROTTLE_BITS,
    kernel_bus_id,
)
from ansible_collections.gpulab.cluster.plugins.module_utils.prom_text import family

# (metric, record key, type, help, scale to the base unit)
GAUGES = [
    ("gpulab_gpu_temperature_celsius", "temperature", "GPU core temperature.", 1),
    ("gpulab_gpu_slowdown_temperature_celsius", "temperature_slowdown", "Temperature at which the GPU slows.", 1),
    ("gpulab_gpu_power_draw_watts", "power_draw", "Power the GPU draws.", 1),
    ("gpulab_gpu_power_limit_watts", "power_limit", "Power limit the driver enforces.", 1),
    ("gpulab_gpu_sm_clock_hertz", "clock_sm", "SM clock.", 1e6),
    ("gpulab_gpu_memory_clock_hertz", "clock_memory", "Memory clock.", 1e6),
    ("gpulab_gpu_memory_used_bytes", "memory_used", "Frame buffer memory in use.", 1),
    ("gpulab_gpu_memory_total_bytes", "memory_total", "Frame buffer memory.", 1),
    ("gpulab_gpu_utilization_ratio", "utilization_gpu", "Share of the last sample period a kernel ran.", 0.01),
    ("gpulab_gpu_memory_utilization_ratio", "utilization_memory", "Share of it memory was read or written.", 0.01),
    ("gpulab_gpu_fan_speed_ratio", "fan_speed", "Fan speed of its maximum (GPUs with a fan).", 0.01),
    ("gpulab_gpu_pcie_link_width", "pcie_width", "PCIe lanes in use.", 1),
    ("gpulab_gpu_pcie_link_width_max", "pcie_width_max", "PCIe lanes the link can have.", 1),
    ("gpulab_gpu_pcie_link_generation", "pcie_gen", "PCIe generation in use.", 1),
    ("gpulab_gpu_ecc_uncorrected_volatile_errors", "ecc_uncorrected_volatile", "Uncorrected ECC errors since boot.", 1),
    ("gpulab_gpu_ecc_corrected_volatile_errors", "ecc_corrected_volatile", "Corrected ECC errors since boot.", 1),
    ("gpulab_gpu_remapped_rows_correctable", "remap_correctable", "Rows remapped for correctable errors.", 1),
    ("gpulab_gpu_remapped_rows_uncorrectable", "remap_uncorrectable", "Rows remapped for uncorrectable errors.", 1),
]
FLAGS = [
    ("gpulab_gpu_ecc_supported", "ecc_supported", "1 where ECC is on; 0 where the GPU has none or it is off."),
    ("gpulab_gpu_remap_pending", "remap_pending", "1 while a row remap waits for a GPU reset."),
    ("gpulab_gpu_remap_failed", "remap_failure", "1 when a row remap failed (the GPU needs service)."),
    ("gpulab_gpu_persistence_mode", "persistence_mode", "1 with persistence mode on."),
]


def render(
    gpus: list[dict[str, Any]] | None,
    xid_totals: Mapping[tuple[str, int], int] | None = None,
    error: str | None = None,
) -> str:
    """The textfile for one collection. gpus None means NVML could not be read (error says why):
    then only gpulab_gpu_exporter_up 0 and the reason, so an alert can tell "no data" from "healthy".
    xid_totals: (bus id as the kernel prints it, XID code) -> the count to show (xid_series)."""
    up = gpus is not None
    lines = family("gpulab_gpu_exporter_up", "gauge", "1 when NVML answered on this node.", [({}, 1 if up else 0)])
    if not up:
        reason = [({"reason": error or "unknown"}, 1)]
        lines += family("gpulab_gpu_exporter_error", "gauge", "Why NVML could not be read.", reason)
        return "\n".join(lines) + "\n"
    ids = [{"gpu": str(gpu["index"]), "uuid": gpu.get("uuid") or ""} for gpu in gpus]
    info = [
        ({**ids[i], "name": gpu.get("name") or "", "bus_id": gpu.get("bus_id") or "",
          "driver_version": gpu.get("driver_version") or ""}, 1)
        for i, gpu in enumerate(gpus)
    ]  # fmt: skip
    lines += family("gpulab_gpu_info", "gauge", "The GPU's name, bus and driver.", info)
    lines += family("gpulab_gpus", "gauge", "GPUs NVML lists.", [({}, len(gpus))])
    for name, key, help_text, scale in GAUGES:
        # Rounded: 41 x 0.01 is 0.41000000000000003 in binary floating point.
        samples = [(ids[i], round(gpu[key] * scale, 6)) for i, gpu in enumerate(gpus) if gpu.get(key) is not None]
        lines += family(name, "gauge", help_text, samples)
    for name, key, help_text in FLAGS:
        samples = [(ids[i], 1 if gpu[key] else 0) for i, gpu in enumerate(gpus) if gpu.get(key) is not None]
        lines += family(name, "gauge", help_text, samples)
    ecc_total = [
        (ids[i], gpu["ecc_uncorrected_aggregate"])
        for i, gpu in enumerate(gpus)
        if gpu.get("ecc_uncorrected_aggregate") is not None
    ]
    lines += family(
        "gpulab_gpu_ecc_uncorrected_aggregate_errors_total", "counter", "Uncorrected ECC errors ever.", ecc_total
    )
    energy = [(ids[i], gpu["energy_total"]) for i, gpu in enumerate(gpus) if gpu.get("energy_total") is not None]
    lines += family("gpulab_gpu_energy_joules_total", "counter", "Energy used since the driver loaded.", energy)
    throttle = [
        ({**ids[i], "reason": reason}, 1 if gpu["throttle_mask"] & bit else 0)
        for i, gpu in enumerate(gpus)
        if gpu.get("throttle_mask") is not None
        for bit, reason in THROTTLE_BITS.items()
    ]
    lines += family("gpulab_gpu_clocks_event_active", "gauge", "1 while this reason holds the clocks down.", throttle)
    xids = [({"bus_id": bus, "xid": str(code)}, count) for (bus, code), count in sorted((xid_totals or {}).items())]
    lines += family("gpulab_gpu_xid_events_total", "counter", "NVRM Xid events in the kernel log.", xids)
    return "\n".join(lines) + "\n"


def count_xids(
    totals: Mapping[tuple[str, int], int], events: Iterable[Mapping[str, Any]]
) -> dict[tuple[str, int], int]:
    """Add the Xid events read since the last cursor (nvidia_smi.parse_xids) to the running totals."""
    result = dict(totals)
    for event in events:
        key = (event["bus"], event["code"])
        result[key] = result.get(key, 0) + 1
    return result


def xid_series(
    gpus: list[dict[str, Any]] | None,
    previous: Mapping[tuple[str, int], int],
    current: Mapping[tuple[str, int], int],
) -> dict[tuple[str, int], int]:
    """The Xid counts one collection shows: each GPU's hardware XIDs from the first collection on, and
    every series at 0 in the first collection that writes it, its count from the next one. increase()
    sees an event only as a rise from an earlier sample, so a series born at 1 would never alert.
    previous: the keys the last collection wrote (with their counts); current: count_xids' totals."""
    hardware = {
        (kernel_bus_id(gpu["bus_id"]), code) for gpu in gpus or [] if gpu.get("bus_id") for code in HARDWARE_XIDS
    }
    return {key: current.get(key, 0) if key in previous else 0 for key in sorted(hardware | set(current))}
