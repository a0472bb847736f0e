"""Every role documents and validates each of its public variables."""

from pathlib import Path

import pytest
import yaml

ROLES = sorted(p for p in (Path(__file__).resolve().parents[2] / "roles").iterdir() if p.is_dir())


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_argument_spec_names_every_default(role):
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    options = [(name, option) for entry in spec.values() for name, option in entry.get("options", {}).items()]
    assert sorted(set(defaults) - {option[0] for option in options}) == [], (
        "defaults missing from meta/argument_specs.yml"
    )
    for name, option in options:
        assert option.get("description"), f"{name} has no description"
        assert option.get("type"), f"{name} has no type"


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_role_variables_carry_the_role_prefix(role):
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
    assert [n for n in defaults if not n.startswith(f"{role.name}_")] == []


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_a_role_that_ends_early_imports_no_other_role(role):
    """`meta: end_role` skips a host's tasks up to the first role end it meets, and a role imported into
    this one ends there: the tasks after that import would run where the role was meant to end."""
    tasks = {path.name: path.read_text() for path in (role / "tasks").glob("*.yml")}
    if any("ansible.builtin.meta: end_role" in text for text in tasks.values()):
        importing = [name for name, text in tasks.items() if "import_role:" in text or "include_role:" in text]
        assert importing == [], f"{role.name} ends early with meta end_role and imports roles in {importing}"
