#!/usr/bin/python
"""Read a node's software versions, or compare every node's, and return gpulab check records."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cluster_consistency
short_description: Check that every node runs the same OS, kernel, driver, CUDA, NCCL, Slurm and framework versions
description:
  - With I(versions) unset, reads this node's versions (C(collect)); run it on every node and register the result.
  - With I(versions) (host to versions, from the registered results), compares them and names the odd node and
    its version for each component (C(compare)); run it once.
  - A component a node does not have (no driver on the management node) is not a mismatch, unless I(required)
    says the node must have it.
  - The training frameworks (C(pytorch), C(deepspeed), C(webdataset), C(scikit-learn), C(tensorflow), C(jax),
    C(ray)) are read from the C(.dist-info) directories of the virtualenv I(python_env), without starting Python.
version_added: 0.1.0
author: gpulab developers (@gpulab)
options:
  versions:
    description: Host name to its C(versions) as returned by a collect run.
    type: dict
  components:
    description: Components to compare.
    type: list
    elements: str
    choices: [os, kernel, driver, cuda, nccl, slurm, pytorch, deepspeed, webdataset, scikit-learn, tensorflow, jax,
      ray]
    default: [os, kernel, driver, cuda, nccl, slurm]
  python_env:
    description: With I(versions) unset, the training environment whose frameworks are read.
    type: path
    default: /opt/gpulab/train
  required:
    description:
      - Host name to the components it must report (C(driver) on a node declared with GPUs). Such a node
        without one fails instead of being left out of the comparison.
    type: dict
    default: {}
  smi_timeout:
    description: With I(versions) unset, seconds C(nvidia-smi) may take to say the driver (where C(/proc) does not)
      and the GPUs' VBIOS. A wedged driver hangs it; both are then left unknown and the other versions still come.
    type: int
    default: 30
extends_documentation_fragment:
  - gpulab.cluster.checks
  - gpulab.cluster.read_only
"""

EXAMPLES = r"""
- name: Read versions on every node
  gpulab.cluster.cluster_consistency:
  register: node_versions

- name: Compare them
  gpulab.cluster.cluster_consistency:
    versions: "{{ dict(ansible_play_hosts | zip(__found)) }}"
  vars:
    __found: "{{ ansible_play_hosts | map('extract', hostvars, ['node_versions', 'versions']) }}"
  run_once: true
"""

RETURN = r"""
versions:
  description:
    - This node's versions (collect) - os, kernel, driver, cuda, nccl, slurm, frameworks, and C(vbios) (the GPUs'
      firmware, distinct versions joined by C( / )); null where absent.
    - C(vbios) is not a component to compare across nodes (they may hold other GPUs); doctor.yml compares it with the
      node's own baseline.
  returned: when collecting
  type: dict
  sample: {os: Debian 12, kernel: 6.1.0-37-amd64, driver: 550.127.05, cuda: 12.4.131, nccl: 2.21.5,
           slurm: 22.05.8, pytorch: 2.13.0+cu124, deepspeed: 0.19.8, webdataset: 1.0.2, scikit-learn: 1.9.1,
           tensorflow: null, jax: null}
checks:
  description: One record per component (compare).
  returned: when comparing
  type: list
  elements: dict
status:
  description: Worst status among the checks.
  returned: when comparing
  type: str
"""

import ctypes
import glob
import os
import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.cluster.plugins.module_utils import versions as v
from ansible_collections.gpulab.cluster.plugins.module_utils.check_module import AT_LEAST_1, run_with_deadline, start
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import exit_with_records

# The CUDA repository's toolkit is not on PATH for non-login shells.
CUDA_NVCC = "/usr/local/cuda/bin/nvcc"


def _os_release() -> str | None:
    try:
        with open("/etc/os-release", encoding="utf-8") as handle:
            fields = dict(line.rstrip("\n").split("=", 1) for line in handle if "=" in line)
    except OSError:
        return None
    name, version = fields.get("NAME", "").strip('"'), fields.get("VERSION_ID", "").strip('"')
    name = name.replace(" GNU/Linux", "")
    return f"{name} {version}".strip() or None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def _linked_nccl() -> str | None:
    """The NCCL the dynamic linker finds (the nccl role's wheel path has no package to ask)."""
    try:
        library = ctypes.CDLL("libnccl.so.2")
        code = ctypes.c_int()
        if library.ncclGetVersion(ctypes.byref(code)) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return v.nccl_version_from_code(code.value)


def _smi_versions(module: AnsibleModule) -> tuple[str | None, str | None]:
    """(driver, VBIOS) as nvidia-smi reports them; None where there is none, or nvidia-smi does not answer in time."""
    smi = module.get_bin_path("nvidia-smi")
    if not smi:
        return None, None
    query = [smi, "--query-gpu=driver_version,vbios_version", "--format=csv,noheader"]
    rc, out, _err = run_with_deadline(query, module.params["smi_timeout"])
    return (v.parse_smi_driver(out), v.parse_smi_vbios(out)) if rc == 0 else (None, None)


def collect(module: AnsibleModule) -> dict[str, str | None]:
    def run(*argv: str) -> str:
        binary = module.get_bin_path(argv[0])
        if not binary:
            return ""
        rc, out, _err = module.run_command([binary, *argv[1:]])
        return out if rc == 0 else ""

    nvcc = module.get_bin_path("nvcc") or (CUDA_NVCC if os.path.exists(CUDA_NVCC) else None)
    cuda = None
    if nvcc:
        rc, out, _err = module.run_command([nvcc, "--version"])
        cuda = v.parse_nvcc(out) if rc == 0 else None
    smi_driver, vbios = _smi_versions(module)
    nccl = v.parse_dpkg_version(run("dpkg-query", "-W", "-f", "${Version}", "libnccl2")) or _linked_nccl()
    frameworks: dict[str, str] = {}
    for site in glob.glob(os.path.join(module.params["python_env"], "lib", "python3*", "site-packages")):
        frameworks.update(v.parse_dist_info(os.listdir(site)))
    return {
        "os": _os_release(),
        "kernel": platform.release(),
        # The loaded kernel module; nvidia-smi where /proc does not show it (a container with the GPUs passed in).
        "driver": v.parse_driver_proc(_read("/proc/driver/nvidia/version")) or smi_driver,
        # Firmware: compared with the node's own baseline (doctor.yml), not across nodes, which may hold other GPUs.
        "vbios": vbios,
        "cuda": cuda,
        "nccl": nccl,
        "slurm": v.parse_slurm(run("slurmd", "-V")),
        **{component: frameworks.get(component) for component in v.FRAMEWORKS},
    }


ARGUMENT_SPEC = dict(
    versions=dict(type="dict"),
    components=dict(type="list", elements="str", choices=list(v.ALL_COMPONENTS), default=list(v.COMPONENTS)),
    python_env=dict(type="path", default="/opt/gpulab/train"),
    required=dict(type="dict", default={}),
    smi_timeout=dict(type="int", default=30),
)


def input_problem(p: dict) -> str | None:
    """The first setting that cannot be compared, as a message naming it; None when all can (or when collecting)."""
    versions, required = p["versions"], p["required"]
    if versions is None:
        return None
    if not versions:
        return "versions is empty: pass host -> versions from a collect run on every node"
    bad = sorted(h for h, d in versions.items() if not isinstance(d, dict))
    if bad:
        return f"versions of {', '.join(bad)} are not a mapping of component to version"
    bad = sorted(h for h, c in required.items() if not isinstance(c, list) or not set(c) <= set(v.ALL_COMPONENTS))
    if bad:
        return f"required of {', '.join(bad)} must be a list of: {', '.join(v.ALL_COMPONENTS)}"
    return None


def main() -> None:
    module = start(ARGUMENT_SPEC, input_problem, {"smi_timeout": AT_LEAST_1})
    versions, required = module.params["versions"], module.params["required"]
    if versions is None:
        module.exit_json(changed=False, versions=collect(module))
    records = v.compare(versions, tuple(module.params["components"]), required)
    exit_with_records(module, records)


if __name__ == "__main__":
    main()
