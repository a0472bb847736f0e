"""On a lent GPU machine: gpulab's GPU metrics from the real NVML, and what NVML would not answer.

    python3 tests/device/gpu_metrics.py OUTDIR   (nvidia-ml-py and the collection importable)

Reads the GPUs as the monitoring role's collector does (nvidia_smi.collect_nvml, gpu_metrics.render)
and writes OUTDIR/gpulab_gpu.prom, for `promtool check metrics`, and OUTDIR/nvml_errors.json: each
NVML device call that raised on any GPU, with the error (NVMLError_NotSupported: a field the GPU
does not report). Exits 1 when NVML cannot be read at all.
"""

import json
import sys
from pathlib import Path

from ansible_collections.gpulab.cluster.plugins.module_utils import gpu_metrics, nvidia_smi


class Recorder:
    """pynvml, with every nvmlDevice* call that raises noted before the error goes on."""

    def __init__(self, nvml):
        self._nvml = nvml
        self.errors = {}

    def __getattr__(self, name):
        value = getattr(self._nvml, name)
        if not (callable(value) and name.startswith("nvmlDevice")):
            return value

        def call(*args):
            try:
                return value(*args)
            except self._nvml.NVMLError as error:
                self.errors[name] = type(error).__name__
                raise

        return call


def main():
    out = Path(sys.argv[1])
    import pynvml

    nvml = Recorder(pynvml)
    try:
        gpus, info = nvidia_smi.collect_nvml(nvml)
    except pynvml.NVMLError as error:
        print(f"NVML cannot be read: {type(error).__name__}", file=sys.stderr)
        return 1
    (out / "gpulab_gpu.prom").write_text(gpu_metrics.render(gpus, {}))
    record = {"driver": info.get("driver_version"), "gpus": [g["name"] for g in gpus], "nvml_errors": nvml.errors}
    (out / "nvml_errors.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(json.dumps(record, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
