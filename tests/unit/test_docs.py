"""Documentation that cannot drift: settings and error codes named in code appear in the reference in docs/,
links between the documents resolve, and the README stays a short front page that points into docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text()
OPERATIONS = (DOCS / "operations.md").read_text()
API = (DOCS / "api.md").read_text()
# Every Markdown file a reader may follow a link from.
DOCUMENTS = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted(DOCS.glob("*.md"))]
README_MAX_LINES = 150


def _code() -> str:
    return "\n".join(p.read_text() for p in (ROOT / "console").rglob("*.py"))


def settings_read_in(code: str) -> set[str]:
    """Environment variables the code reads: `os.environ[...]`, `os.environ.get(...)`, `days("NAME", ...)`
    (a number of days), click's `envvar="NAME"`, and `..._ENV = "NAME"` constants."""
    names = set(re.findall(r"os\.environ(?:\.get)?\(\s*\"([A-Z_]+)\"", code))
    names |= set(re.findall(r"os\.environ\[\"([A-Z_]+)\"\]", code))
    names |= set(re.findall(r"\bdays\(\s*\"([A-Z_]+)\"", code))
    names |= set(re.findall(r"envvar=\"([A-Z_]+)\"", code))
    names |= set(re.findall(r"^[A-Z_]+_ENV = \"([A-Z_]+)\"", code, flags=re.MULTILINE))
    return names


def test_every_environment_variable_is_documented():
    names = settings_read_in(_code())
    # Each way of reading a setting is still found (a pattern that stops matching would hide a setting).
    assert {"DATABASE_URL", "WORKSPACE_IDLE_DAYS", "CONSOLE_API_SECRET", "SERVING_CPUS"} <= names
    missing = sorted(n for n in names if f"`{n}`" not in OPERATIONS)
    assert not missing, f"settings read in code but not in docs/operations.md's Configuration: {missing}"


def test_the_readme_s_shared_server_limits_are_settings_the_code_reads():
    section = README.split("## Running a shared server", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([A-Z][A-Z_]+)`", section))
    assert {"CONSOLE_PAGES_PER_SECOND", "PRESENTER_MAX_PROFILES", "EVENTS_KEEP"} <= named
    code = _code()
    unread = sorted(n for n in named if f'"{n}"' not in code)
    assert not unread, f"the README's shared-server table names settings nothing reads: {unread}"


def test_every_api_error_code_is_documented():
    code = _code()
    codes = set(re.findall(r"code=\"([A-Z_]+)\"", code))
    codes |= set(re.findall(r"^\s+code = \"([A-Z_]+)\"", code, flags=re.MULTILINE))
    assert "INVALID_FIELDS" in codes
    missing = sorted(c for c in codes if f"`{c}`" not in API)
    assert not missing, f"error codes raised in code but not listed in docs/api.md: {missing}"


def test_every_error_type_is_documented():
    types = set(re.findall(r"^\s+type = \"([A-Z_]+)\"", _code(), flags=re.MULTILINE))
    assert {"INVALID_REQUEST_PARAMETERS", "UNAUTHORIZED_REQUEST", "RECORD_NOT_FOUND"} <= types
    missing = sorted(t for t in types if f"`{t}`" not in API)
    assert not missing, f"error types in code but not in docs/api.md's error table: {missing}"


def test_the_readme_is_a_short_front_page():
    lines = README.splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; reference belongs in docs/"
    assert "make run" in README and "make test" in README
    unlinked = [p.name for p in sorted(DOCS.glob("*.md")) if f"(docs/{p.name}" not in README]
    assert not unlinked, f"pages in docs/ the README does not link: {unlinked}"


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file (code blocks skipped; repeats get -1, -2, ...)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"#{1,6} (.+)", line)
        if match:
            anchor = github_anchor(match.group(1))
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The relative link targets of a Markdown file (outside code blocks), images included."""
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t for t in targets if not re.match(r"[a-z]+:", t)]


def test_links_between_documents_resolve():
    broken = []
    for document in DOCUMENTS:
        for target in links(document):
            file_part, _, anchor = target.partition("#")
            linked = (document.parent / file_part).resolve() if file_part else document
            if not linked.exists():
                broken.append(f"{document.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{document.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


def test_the_link_check_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Safe retries: `Idempotency-Key`\n\n```\n# not a heading\n```\n")
    assert anchors(page) == {"safe-retries-idempotency-key"}
    assert links(tmp_path / "page.md") == []
    page.write_text("[a](other.md#x) [b](https://example.com) ![c](shot.png)\n")
    assert links(page) == ["other.md#x", "shot.png"]
