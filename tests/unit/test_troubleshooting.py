"""docs/troubleshooting.md names every check code a module can give, and no code that none gives."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A code as the modules write it: code="GPU_XID" in a record, or "code": "CHECK_ERROR" in a dict.
WRITTEN = re.compile(r"""code=["']([A-Z][A-Z0-9_]+)["']|["']code["']: ["']([A-Z][A-Z0-9_]+)["']""")
# A code as the page lists it: in backticks in a table's first column.
LISTED = re.compile(r"^\| (`[A-Z][A-Z0-9_]+`(?:, `[A-Z][A-Z0-9_]+`)*) \|", re.MULTILINE)


def codes_in_plugins():
    codes = set()
    for path in (ROOT / "plugins").rglob("*.py"):
        for match in WRITTEN.finditer(path.read_text()):
            codes.add(match.group(1) or match.group(2))
    return codes


def codes_on_the_page():
    page = (ROOT / "docs" / "troubleshooting.md").read_text()
    return {code.strip("`") for cell in LISTED.findall(page) for code in cell.split(", ")}


def test_every_code_the_modules_give_has_a_row_and_every_row_a_code():
    written, listed = codes_in_plugins(), codes_on_the_page()
    assert len(written) > 70  # the pattern still finds them
    assert sorted(written - listed) == [], "codes with no row in docs/troubleshooting.md"
    assert sorted(listed - written) == [], "rows for codes no module gives"
