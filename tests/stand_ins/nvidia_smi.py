"""A stand-in for `nvidia-smi`: the power-limit calls gpulab makes, answered from (and written to) the
pynvml stand-in's JSON file, so that the GPU collector then reports what was set.

    python3 nvidia_smi.py --query-gpu=index,uuid,power.limit,power.min_limit,power.max_limit,power.default_limit \
        --format=csv,noheader,nounits
    python3 nvidia_smi.py [-i INDEX|UUID] -pl WATTS

GPULAB_NVML_STAND_IN names the file (tests/stand_ins/nvml-two-gpus.json is an example). A limit outside
a GPU's "limit_range_mw" is refused with nvidia-smi's message and exit status, and nothing is written.
"""

from __future__ import annotations

import json
import os
import sys

FIELDS = {
    "index": lambda i, gpu: str(i),
    "uuid": lambda i, gpu: gpu["uuid"],
    "power.limit": lambda i, gpu: f"{gpu['limit_mw'] / 1000:.2f}",
    "power.min_limit": lambda i, gpu: (
        f"{gpu['limit_range_mw'][0] / 1000:.2f}" if gpu.get("limit_range_mw") else "[N/A]"
    ),
    "power.max_limit": lambda i, gpu: (
        f"{gpu['limit_range_mw'][1] / 1000:.2f}" if gpu.get("limit_range_mw") else "[N/A]"
    ),
    "power.default_limit": lambda i, gpu: f"{gpu.get('limit_default_mw', gpu['limit_mw']) / 1000:.2f}",
}


def main(argv: list[str]) -> int:
    path = os.environ["GPULAB_NVML_STAND_IN"]
    with open(path, encoding="utf-8") as handle:
        state = json.load(handle)
    gpus = state["gpus"]
    args = dict(zip(argv[::2], argv[1::2], strict=False))
    query = next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--query-gpu=")), None)
    if query is not None:
        for i, gpu in enumerate(gpus):
            print(", ".join(FIELDS[field](i, gpu) for field in query.split(",")))
        return 0
    if "-pl" not in args:
        print(f"nvidia-smi stand-in: only --query-gpu and -pl, got {argv}", file=sys.stderr)
        return 2
    watts = float(args["-pl"])
    targets = [i for i, gpu in enumerate(gpus) if args.get("-i", str(i)) in (str(i), gpu["uuid"])]
    if not targets:
        print(f"No devices were found matching {args['-i']}", file=sys.stderr)
        return 6
    for i in targets:
        low, high = (mw / 1000 for mw in gpus[i]["limit_range_mw"])
        if not low <= watts <= high:
            print(f"Provided power limit {watts:.2f} W is not a valid power limit which should be between "
                  f"{low:.2f} W and {high:.2f} W for GPU {gpus[i]['bus_id']}")  # fmt: skip
            print("Terminating early due to previous errors.")
            return 2
    for i in targets:
        print(
            f"Power limit for GPU {gpus[i]['bus_id']} was set to {watts:.2f} W from {gpus[i]['limit_mw'] / 1000:.2f} W."
        )
        gpus[i]["limit_mw"] = int(watts * 1000)
    with open(path + ".new", "w", encoding="utf-8") as handle:
        json.dump(state, handle)
    os.replace(path + ".new", path)
    print("All done.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
