"""Every module's DOCUMENTATION, EXAMPLES and RETURN are YAML that ansible-doc can read."""

import ast
from pathlib import Path

import pytest
import yaml

MODULES = sorted((Path(__file__).resolve().parents[4] / "plugins" / "modules").glob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_module_docs_parse(path):
    docs = {
        node.targets[0].id: node.value.value
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.Assign)
        and getattr(node.targets[0], "id", "") in ("DOCUMENTATION", "EXAMPLES", "RETURN")
    }
    assert set(docs) == {"DOCUMENTATION", "EXAMPLES", "RETURN"}
    assert yaml.safe_load(docs["DOCUMENTATION"])["module"] == path.stem
    assert isinstance(yaml.safe_load(docs["EXAMPLES"]), list)
    assert isinstance(yaml.safe_load(docs["RETURN"]), dict)
