"""Role templates rendered for the tests that run what they render: Jinja as Ansible's template lookup
sets it up (undefined variables are errors, trim_blocks), with stand-ins for the Ansible filters the
templates use."""

import json
import os
from pathlib import Path

import jinja2

FILTERS = {"comment": lambda text: f"# {text}", "dirname": os.path.dirname, "to_json": json.dumps}


def render(template: Path, **variables) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, keep_trailing_newline=True)
    env.filters.update(FILTERS)
    return env.from_string(template.read_text()).render(ansible_managed="Ansible managed", **variables)
