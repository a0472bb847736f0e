"""Make `ansible_collections.gpulab.cluster` importable from the in-place collection link."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / ".collections"
if not (COLLECTIONS / "ansible_collections" / "gpulab" / "cluster").exists():
    raise RuntimeError("run `make setup` first: .collections/ansible_collections/gpulab/cluster is missing")
sys.path.insert(0, str(COLLECTIONS))
