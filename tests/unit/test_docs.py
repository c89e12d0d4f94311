"""Documentation that cannot drift: settings and error codes named in code appear in the README."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_every_environment_variable_is_documented():
    code = "\n".join(p.read_text() for p in (ROOT / "console").rglob("*.py"))
    names = set(re.findall(r"os\.environ(?:\.get)?\(\s*\"([A-Z_]+)\"", code))
    names |= set(re.findall(r"os\.environ\[\"([A-Z_]+)\"\]", code))
    assert names, "expected to find settings read from the environment"
    missing = sorted(n for n in names if f"`{n}`" not in README)
    assert not missing, f"settings read in code but not in README's Configuration: {missing}"


def test_every_api_error_code_is_documented():
    code = "\n".join(p.read_text() for p in (ROOT / "console").rglob("*.py"))
    codes = set(re.findall(r"code=\"([A-Z_]+)\"", code))
    codes |= set(re.findall(r"^\s+code = \"([A-Z_]+)\"", code, flags=re.MULTILINE))
    assert "INVALID_FIELDS" in codes
    missing = sorted(c for c in codes if f"`{c}`" not in README)
    assert not missing, f"error codes raised in code but not listed in README: {missing}"


def test_every_error_type_is_documented():
    code = "\n".join(p.read_text() for p in (ROOT / "console").rglob("*.py"))
    types = set(re.findall(r"^\s+type = \"([A-Z_]+)\"", code, flags=re.MULTILINE))
    assert {"INVALID_REQUEST_PARAMETERS", "UNAUTHORIZED_REQUEST", "RECORD_NOT_FOUND"} <= types
    missing = sorted(t for t in types if f"`{t}`" not in README)
    assert not missing, f"error types in code but not in README's error table: {missing}"
