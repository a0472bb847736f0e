#!/usr/bin/python
"""Check the NVIDIA GPUs of a node and return gpulab check records."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_health
short_description: Check a node's NVIDIA GPUs (count, model, driver pin, ECC, remaps, throttling, PCIe, XID)
description:
  - Reads the GPUs through NVML (the C(nvidia-ml-py) bindings) when they are importable, else through
    C(nvidia-smi) (CSV query, or the C(-q -x) XML), and the kernel log for XID errors.
  - "Checks: GPU count and model against the inventory, driver version against the pin, uncorrectable and
    correctable ECC, row remap pending/failure/count, retired pages, active clock slowdown reasons, PCIe link
    width (and generation when asked), persistence mode, temperature margin to slowdown, power draw against the
    limit, NVLink links, XID errors (application XIDs excluded)."
  - A node without the driver, the tools or a GPU gets an C(unavailable) record that says what was missing,
    unless I(expected_count) or I(driver_version) declares GPUs there; then it C(fail)s, naming what is
    missing. C(nvidia-smi) exit codes 14 and 15 (infoROM corrupted, GPU fallen off the bus) are faults.
  - Failures that hide from a plain query are their own checks - every NVIDIA GPU on the PCI bus (sysfs, classes
    VGA and 3D) must be one the driver lists (C(GPU_NOT_IN_DRIVER)), a kernel log line saying a GPU "has fallen
    off the bus" fails with or without an XID (C(GPU_FELL_OFF_BUS)), and GPU memory held with no process warns.
  - Checks that do not apply to the GPU (ECC on a GeForce card, or with ECC turned off) are C(n/a), which never
    changes the verdict.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  source:
    description: Where GPU values come from. C(auto) tries NVML, then C(nvidia-smi).
    type: str
    choices: [auto, nvml, csv, xml]
    default: auto
  expected_count:
    description: Number of GPUs the node must have (at least 1). A node where none can be read then fails.
    type: int
  expected_model:
    description: Text the GPU name must contain, for example C(RTX 4090).
    type: str
  driver_version:
    description: The pinned driver; C(550) matches C(550.127.05). A node where no driver answers then fails.
    type: str
  ecc_corrected_max:
    description: Correctable ECC errors since driver load above which the GPU fails.
    type: int
    default: 20000000
  remap_uncorrectable_max:
    description: Uncorrectable remapped rows above which the GPU fails (DCGM uses 512).
    type: int
    default: 512
  retired_pages_max:
    description: Retired pages above which the GPU fails (DCGM fails at 63).
    type: int
    default: 62
  temperature_margin_c:
    description: Warn when the GPU is within this many degrees of its slowdown temperature.
    type: float
    default: 5
  temperature_max_c:
    description: Warn above this temperature when the GPU reports no slowdown threshold.
    type: float
    default: 85
  pcie_width:
    description: The PCIe width the GPUs' slots give (C(8) where two GPUs share a consumer board's x16 as
      x8/x8). Each GPU's link is held to it, not to the card's own maximum; unset holds it to the maximum.
    type: int
  check_pcie_gen:
    description: Also require the maximum PCIe generation. Only meaningful under load, as idle GPUs drop to gen 1.
    type: bool
    default: false
  power_limits:
    description:
      - The power limits the node's GPUs must be held at, as C(nvidia_driver_power_limits) gives them (watts by
        GPU index, by UUID or C(all)). A GPU at another limit fails (its boot unit did not run, or the GPU was
        swapped), and so does an entry that names a GPU the node does not have. Empty checks none.
    type: dict
    default: {}
  require_persistence:
    description: Warn when persistence mode is disabled.
    type: bool
    default: true
  check_nvlink:
    description: Check NVLink links with C(nvidia-smi nvlink --status).
    type: bool
    default: true
  xid_window_hours:
    description: How far back the kernel log is searched for XID errors; 0 skips the XID check.
    type: int
    default: 24
  xid_ignore:
    description: XID codes caused by applications, not hardware.
    type: list
    elements: int
    default: [13, 31, 43, 45, 68]
  memory_held_max_mib:
    description:
      - MiB a GPU may hold while no process runs on it; above it the GPU warns (C(GPU_MEMORY_HELD)) - memory
        left by a job that died, or a process the node cannot see. NVML and C(-q -x) list compute and
        graphics processes; the CSV source lists compute processes only, so a desktop's display server counts
        as none there.
    type: int
    default: 1024
  smi_timeout:
    description:
      - Seconds each C(nvidia-smi) call, and the NVML reading as a whole, may take. One that does not answer in
        time is a failure, C(GPU_DRIVER_HUNG).
        A wedged driver or GPU hangs C(nvidia-smi), and a check that waited for it would never give a verdict.
    type: int
    default: 30
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: Hold each GPU node to the inventory
  gpulab.cluster.gpu_health:
    expected_count: "{{ gpulab_gpu_count }}"
    expected_model: "{{ gpulab_gpu_model }}"
    driver_version: "{{ gpulab_versions.nvidia_driver_branch }}"
  register: gpu

- name: Report only, never fail
  gpulab.cluster.gpu_health:
    fail_on: never
"""

RETURN = r"""
status:
  description: Worst status among the checks (n/a, pass, unavailable, warn, fail).
  returned: always
  type: str
  sample: pass
summary:
  description: Number of checks per status.
  returned: always
  type: dict
checks:
  description: Check records C({check, status, value, threshold, unit, message, code}), per GPU as C(gpuN.<check>).
  returned: always
  type: list
  elements: dict
gpus:
  description: The values read per GPU (index, name, bus_id, temperature, power, PCIe, ECC, remaps, throttle mask).
  returned: always
  type: list
  elements: dict
source:
  description: Where the values came from (nvml, nvidia-smi csv, nvidia-smi xml, none).
  returned: always
  type: str
xids:
  description: XID events found in the kernel log window.
  returned: when the kernel log was read
  type: list
  elements: dict
"""

import os
import threading

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import nvidia_smi as smi
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import (
    AT_LEAST_1,
    HUNG_RC,
    NOT_NEGATIVE,
    run_with_deadline,
    start,
)
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import (
    exit_with_records,
    failed,
    unavailable,
)

# The options that are smi.Limits fields: what the GPUs are held to.
LIMITS = list(smi.Limits.__dataclass_fields__)


def _nvml_gpus(module):
    """(gpus, reason, fault). gpus is None when NVML cannot be used; reason says why; fault when it hangs.

    NVML's calls go into the driver and block there when it is wedged: they run in a thread the module
    waits for no longer than smi_timeout, and leaves behind (a daemon thread does not hold up the exit).
    """
    try:
        import pynvml  # noqa: PLC0415 - optional dependency (nvidia-ml-py)
    except ImportError:
        return None, "nvidia-ml-py is not installed", None
    answer = {}

    def read():
        try:
            answer["gpus"] = smi.collect_nvml(pynvml)[0]
        except pynvml.NVMLError as exc:
            answer["error"] = f"NVML: {exc}"

    worker = threading.Thread(target=read, name="nvml", daemon=True)
    worker.start()
    worker.join(module.params["smi_timeout"])
    if worker.is_alive():
        return None, "NVML did not answer", _hung(module, "NVML (nvidia-ml-py)")
    return answer.get("gpus"), answer.get("error"), None


def _smi(module, smi_path, *args):
    """nvidia-smi under a deadline: (rc, out, err), rc HUNG_RC when it did not answer in smi_timeout."""
    return run_with_deadline([smi_path, *args], module.params["smi_timeout"])


def _hung(module, what):
    seconds = module.params["smi_timeout"]
    return failed(
        "gpu_query",
        f"{what} did not answer in {seconds} s: the driver is unresponsive (a wedged GPU or driver); "
        "look for Xid and 'fallen off the bus' in the kernel log, then reset the GPU or reboot the node",
        value=seconds,
        unit="s",
        code="GPU_DRIVER_HUNG",
    )


def _smi_gpus(module, smi_path, fmt):
    """(gpus, reason, fault). fault is a check record when nvidia-smi reports broken hardware or hangs."""
    if fmt == "xml":
        rc, out, err = _smi(module, smi_path, "-q", "-x")
    else:
        rc, out, err = _smi(module, smi_path, f"--query-gpu={smi.query_fields()}", "--format=csv,noheader,nounits")
        if rc not in (HUNG_RC, 0) and "field" in (out + err).lower():  # older driver: the old field names
            rc, out, err = _smi(
                module, smi_path, f"--query-gpu={smi.query_fields(old_names=True)}", "--format=csv,noheader,nounits"
            )
    if rc == HUNG_RC:
        return (
            None,
            "nvidia-smi did not answer",
            _hung(module, "nvidia-smi -q" if fmt == "xml" else "nvidia-smi --query-gpu"),
        )
    if rc in smi.SMI_HARDWARE_EXITS:
        reason = smi.SMI_HARDWARE_EXITS[rc]
        return None, reason, failed("gpu_query", f"nvidia-smi exited {rc}: {reason}", value=rc, code="GPU_HARDWARE")
    if rc != 0:
        reason = smi.SMI_EXITS.get(rc, (err or out).strip()[:200] or "unknown error")
        return None, f"nvidia-smi exited {rc}: {reason}", None
    try:
        if fmt == "xml":
            gpus, _unused = smi.parse_query_xml(out)
        else:
            gpus = smi.parse_query_csv(out)
            extra = {}  # what each further CSV query printed; None where it is not supported
            for name, query in (
                ("remap", f"--query-remapped-rows={smi.REMAP_FIELDS}"),
                ("memory", f"--query-gpu={smi.MEMORY_FIELDS}"),
                ("apps", f"--query-compute-apps={smi.COMPUTE_APP_FIELDS}"),
            ):
                rc, out, _err = _smi(module, smi_path, query, "--format=csv,noheader,nounits")
                if rc == HUNG_RC:
                    return None, "nvidia-smi did not answer", _hung(module, "nvidia-smi " + query.partition("=")[0])
                extra[name] = out if rc == 0 else None
            if extra["remap"] is not None:  # pre-Ampere GPUs have no row remapping
                smi.merge_remapped_rows(gpus, smi.parse_remapped_rows_csv(extra["remap"]))
            if extra["memory"] is not None and extra["apps"] is not None:
                smi.merge_memory(gpus, extra["memory"], extra["apps"])
    except smi.GpuParseError as exc:
        module.fail_json(msg=f"could not read nvidia-smi output: {exc}", output=out[:2000])
    return gpus, None, None


# Where the kernel lists PCI devices, each with its vendor and class.
PCI_DEVICES = "/sys/bus/pci/devices"


def _pci_gpus():
    """The NVIDIA GPUs on the PCI bus (sysfs), or None when the bus cannot be read."""
    try:
        names = os.listdir(PCI_DEVICES)
        devices = []
        for name in names:
            with open(f"{PCI_DEVICES}/{name}/vendor") as vendor, open(f"{PCI_DEVICES}/{name}/class") as pci_class:
                devices.append((name, vendor.read(), pci_class.read()))
    except OSError:
        return None
    return smi.nvidia_pci_gpus(devices)


def _kernel_log(module, hours):
    """(text, reason): the kernel log of the last `hours`, from the journal or dmesg."""
    journalctl = module.get_bin_path("journalctl")
    if journalctl:
        rc, out, err = module.run_command([journalctl, "-k", "-o", "short-iso", "--no-pager", "--since", f"-{hours}h"])
        if rc == 0 and out.strip() and "No entries" not in out[:200]:
            return out, None
    dmesg = module.get_bin_path("dmesg")
    if dmesg:
        rc, out, err = module.run_command([dmesg, "--time-format", "iso"])
        if rc == 0:
            return out, None
        return None, f"dmesg exited {rc}: {err.strip()[:120]}"
    return None, "neither journalctl nor dmesg is available"


ARGUMENT_SPEC = dict(
    source=dict(type="str", choices=["auto", "nvml", "csv", "xml"], default="auto"),
    expected_count=dict(type="int"),
    expected_model=dict(type="str"),
    driver_version=dict(type="str"),
    ecc_corrected_max=dict(type="int", default=20_000_000),
    remap_uncorrectable_max=dict(type="int", default=512),
    retired_pages_max=dict(type="int", default=62),
    temperature_margin_c=dict(type="float", default=5.0),
    temperature_max_c=dict(type="float", default=85.0),
    check_pcie_gen=dict(type="bool", default=False),
    pcie_width=dict(type="int"),
    require_persistence=dict(type="bool", default=True),
    power_limits=dict(type="dict", default={}),
    check_nvlink=dict(type="bool", default=True),
    xid_window_hours=dict(type="int", default=24),
    xid_ignore=dict(type="list", elements="int", default=list(smi.APPLICATION_XIDS)),
    memory_held_max_mib=dict(type="int", default=1024),
    smi_timeout=dict(type="int", default=30),
)
BOUNDS = {
    "ecc_corrected_max": NOT_NEGATIVE,
    "remap_uncorrectable_max": NOT_NEGATIVE,
    "retired_pages_max": NOT_NEGATIVE,
    "temperature_margin_c": NOT_NEGATIVE,
    "temperature_max_c": NOT_NEGATIVE,
    "xid_window_hours": NOT_NEGATIVE,
    "memory_held_max_mib": NOT_NEGATIVE,
    "smi_timeout": AT_LEAST_1,
}


def input_problem(p: dict) -> str | None:
    """The first setting that cannot be used, as a message naming it; None when all can."""
    if p["pcie_width"] is not None and p["pcie_width"] not in smi.PCIE_WIDTHS:
        widths = ", ".join(map(str, smi.PCIE_WIDTHS[:-1])) + f" or {smi.PCIE_WIDTHS[-1]}"
        return f"pcie_width must be a PCIe link width ({widths}), got {p['pcie_width']}"
    if p["expected_count"] is not None and not AT_LEAST_1.holds(p["expected_count"]):
        return f"expected_count must be at least 1, got {p['expected_count']}; leave it unset on nodes without GPUs"
    return None


def read_gpus(module: AnsibleModule, smi_path: str | None):
    """(gpus or None, the source read, why each source could not be read, a fault nvidia-smi reported or None)."""
    p = module.params
    gpus, reason, fault, source = None, None, None, "none"
    reasons = []
    if p["source"] in ("auto", "nvml"):
        gpus, reason, fault = _nvml_gpus(module)
        source = "nvml"
        if gpus is None:
            reasons.append(reason)
    if gpus is None and fault is None and p["source"] != "nvml":
        if smi_path:
            fmt = "xml" if p["source"] == "xml" else "csv"
            gpus, reason, fault = _smi_gpus(module, smi_path, fmt)
            source = f"nvidia-smi {fmt}"
            if gpus is None:
                reasons.append(reason)
        else:
            reasons.append("nvidia-smi is not installed")
            source = "none"
    return gpus, source, reasons, fault


def main() -> None:
    module = start(ARGUMENT_SPEC, input_problem, BOUNDS)
    p = module.params
    smi_path = module.get_bin_path("nvidia-smi")
    gpus, source, reasons, fault = read_gpus(module, smi_path)
    pci = _pci_gpus()
    if gpus == [] and p["expected_count"] is None and not pci:  # a node with no GPU: nothing to judge
        gpus, reasons = None, [f"{source} lists no GPU"]

    nvlink = None
    if gpus and p["check_nvlink"] and smi_path:
        rc, out, _err = _smi(module, smi_path, "nvlink", "--status")
        if rc == HUNG_RC:
            gpus, fault = None, _hung(module, "nvidia-smi nvlink --status")
        nvlink = smi.parse_nvlink_status(out) if rc == 0 else None

    xids, drops, log_records, extra = None, None, [], {}
    if p["xid_window_hours"] > 0 and (gpus is not None or fault is not None or pci):
        log, why = _kernel_log(module, p["xid_window_hours"])
        if log is None:
            log_records.append(unavailable("xid", f"kernel log not readable: {why}"))
        else:
            xids, drops = smi.parse_xids(log), smi.parse_bus_drops(log)
            extra["xids"] = xids

    records = smi.evaluate(
        gpus,
        source=source,
        expected_count=p["expected_count"],
        limits=smi.Limits(**{name: p[name] for name in LIMITS}),
        nvlink=nvlink,
        xids=xids,
        xid_ignore=tuple(p["xid_ignore"]),
        bus_drops=drops,
        pci_gpus=pci,
        unavailable_reason="; ".join(reasons),
    )
    if fault is not None:  # nvidia-smi said the hardware is broken: that, not "unavailable"
        records = [fault] + [r for r in records if r.check == "gpu_bus"]
    records += log_records
    exit_with_records(module, records, gpus=gpus or [], source=source, **extra)


if __name__ == "__main__":
    main()
