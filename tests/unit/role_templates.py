"""Role templates rendered for the tests that run what they render: Jinja as Ansible's template lookup
sets it up (undefined variables are errors, trim_blocks), with the collection's own filters under their
FQCN and stand-ins for the Ansible filters and tests the templates use."""

import importlib
import json
import os
import re
import shlex
from pathlib import Path

import jinja2

ROOT = Path(__file__).resolve().parents[2]
FILTERS = {
    "comment": lambda text: f"# {text}",
    "dirname": os.path.dirname,
    "to_json": json.dumps,
    "quote": lambda value: shlex.quote(str(value)),
    "regex_replace": lambda value, pattern, replacement="": re.sub(pattern, replacement, str(value)),
}


TESTS = {"match": lambda value, pattern: re.match(pattern, str(value)) is not None}


def collection_filters() -> dict:
    """Every filter of plugins/filter/, named gpulab.cluster.<name> as templates call them."""
    found = {}
    for path in sorted((ROOT / "plugins/filter").glob("*.py")):
        module = importlib.import_module(f"ansible_collections.gpulab.cluster.plugins.filter.{path.stem}")
        if hasattr(module, "FilterModule"):
            found.update({f"gpulab.cluster.{name}": f for name, f in module.FilterModule().filters().items()})
    return found


def render(template: Path, **variables) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, keep_trailing_newline=True)
    env.filters.update(FILTERS)
    env.filters.update(collection_filters())
    env.tests.update(TESTS)
    return env.from_string(template.read_text()).render(ansible_managed="Ansible managed", **variables)
