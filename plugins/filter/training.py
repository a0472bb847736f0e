"""The training role's settings checked before anything is installed: every problem at once, each naming its
variable."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

EXACT = re.compile(r"^[0-9][0-9A-Za-z.+!]*$")
HOROVOD = (
    "Horovod's last release (0.28.1) does not build against PyTorch >= 2.1: use PyTorch DDP"
    " (torchrun, the ddp job template) or DeepSpeed instead"
)


def training_problems(frameworks: Any, *, versions: Mapping[str, Any], known: list[str]) -> list[str]:
    """What the argument spec cannot check of training_frameworks and training_versions; known: the
    frameworks gpulab can install."""
    if isinstance(frameworks, str):
        return [f"training_frameworks must be a list, got {json.dumps(frameworks).replace(chr(34), chr(39))}"]
    problems = []
    if "horovod" in frameworks:
        problems.append(f"training_frameworks: horovod is refused: {HOROVOD}")
    unknown = [name for name in frameworks if name not in known and name != "horovod"]
    if unknown:
        problems.append(
            f"training_frameworks names frameworks gpulab does not know: {', '.join(unknown)}"
            f" (known: {', '.join(known)})"
        )
    unpinned = [name for name in frameworks if name in known and name not in versions]
    if unpinned:
        problems.append(f"training_versions has no pin for {', '.join(unpinned)}")
    inexact = [f"{name} is {pin}" for name, pin in versions.items() if name in frameworks and not EXACT.match(str(pin))]
    if inexact:
        problems.append(f"training_versions must hold exact versions (like 2.13.0): {', '.join(inexact)}")
    return problems


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"training_problems": training_problems}
