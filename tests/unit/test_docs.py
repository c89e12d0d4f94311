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
    """Environment variables the code reads: `os.environ[...]`, `os.environ.get(...)`, config.py's
    `days("NAME", ...)`, `_number("NAME", ...)` and `_flag("NAME", ...)`, click's `envvar="NAME"`, and
    `..._ENV = "NAME"` constants."""
    names = set(re.findall(r"os\.environ(?:\.get)?\(\s*\"([A-Z_]+)\"", code))
    names |= set(re.findall(r"os\.environ\[\"([A-Z_]+)\"\]", code))
    names |= set(re.findall(r"\b(?:days|_number|_flag)\(\s*\"([A-Z_]+)\"", code))
    names |= set(re.findall(r"envvar=\"([A-Z_]+)\"", code))
    names |= set(re.findall(r"^[A-Z_]+_ENV = \"([A-Z_]+)\"", code, flags=re.MULTILINE))
    return names


def settings_of_other_processes(code: str) -> set[str]:
    """Settings read outside console/config.py on purpose: a command's own options (click's `envvar=`, e.g.
    `console listen`'s, which loads no app) and what `console run` sets for the processes it starts (`_ENV`)."""
    names = set(re.findall(r"envvar=\"([A-Z_]+)\"", code))
    return names | set(re.findall(r"^[A-Z_]+_ENV = \"([A-Z_]+)\"", code, flags=re.MULTILINE))


def test_every_environment_variable_is_documented():
    names = settings_read_in(_code())
    # Each way of reading a setting is still found (a pattern that stops matching would hide a setting).
    assert {"DATABASE_URL", "WORKSPACE_IDLE_DAYS", "CONSOLE_API_SECRET", "SERVING_CPUS"} <= names
    assert {"API_KEYS_PER_MODE", "RUN_WORKER"} <= names  # config.py's _number and _flag
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


# Upper-case names in the docs' code spans that are neither settings nor codes: the shell variables of the
# README's and api.md's examples, and Linux's (a scheduling policy, socket options: operations.md, BENCHMARKS.md).
NOT_CODE_NAMES = {"SECRET", "BASE", "LINK_TOKEN_ID", "API_SECRET", "SCHED_BATCH", "SO_REUSEPORT"}
NOT_CODE_NAMES |= {"SO_ATTACH_REUSEPORT_CBPF"}


def code_spans(path: Path) -> list[str]:
    """The inline code spans of a Markdown file (fenced blocks left out)."""
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    return re.findall(r"`([^`\n]+)`", text)


def upper_case_names(path: Path) -> set[str]:
    """The settings, error codes and constants a document names: `NAME` or `NAME=value` in a code span (three
    characters or more: not a formula's `N` or SQL's `IN`)."""
    spans = code_spans(path)
    names = {m.group(1) for s in spans if (m := re.fullmatch(r"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)(?:=.*)?", s))}
    return {name for name in names if len(name) >= 3}


def _known_text() -> str:
    """What may name a setting, an error code or a constant: the package, the tests, the benchmarks and
    pyproject.toml (the Makefile's variables are read separately)."""
    files = [
        *(ROOT / "console").rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "bench").rglob("*.py"),
    ]
    return "\n".join(p.read_text() for p in [*files, ROOT / "pyproject.toml"])


def test_every_upper_case_name_in_the_docs_is_one_the_code_knows():
    """A setting or error code renamed in the code (or misspelt in a doc) leaves the doc naming nothing."""
    known, makefile = _known_text(), (ROOT / "Makefile").read_text()
    assert "API_KEYS_PER_MODE" in upper_case_names(ROOT / "README.md")  # the parsing still finds names
    # Each kind of mention collected once (a search of the whole text per name took ~12 s): quoted
    # ("NAME" or 'NAME'), assigned (`NAME = …`, `NAME: type = …`), or a Makefile variable (`NAME ?=`).
    quoted = set(re.findall(r"[\"']([A-Z][A-Z0-9_]*)[\"']", known))
    assigned = set(re.findall(r"^\s*([A-Z][A-Z0-9_]*)\s*(?::[^=\n]*)?=", known, flags=re.MULTILINE))
    made = set(re.findall(r"\b([A-Z][A-Z0-9_]*) ?\??=", makefile))
    unknown = []
    for document in DOCUMENTS:
        for name in sorted(upper_case_names(document) - NOT_CODE_NAMES - quoted - assigned - made):
            unknown.append(f"{document.relative_to(ROOT)}: {name}")
    assert not unknown, "names in the docs that nothing in the code, tests or Makefile has:\n" + "\n".join(
        unknown
    )


def test_every_setting_the_docs_name_is_read_in_config():
    """Settings are read in one place, console/config.py (`grep` it for any the docs name), except a command's
    own options and what `console run` hands the processes it starts."""
    code = _code()
    settings = settings_read_in(code)
    in_config = settings_read_in((ROOT / "console" / "config.py").read_text())
    elsewhere = settings_of_other_processes(code)
    assert {"CONSOLE_API", "SERVING_CPUS"} <= elsewhere and "PUBLIC_URL" in in_config
    named = {name: document for document in DOCUMENTS for name in upper_case_names(document) & settings}
    assert {"PUBLIC_URL", "LINK_MATCHING_DELAY_MS", "CONSOLE_API_SECRET", "HOST"} <= set(named)
    astray = sorted(f"{named[n].relative_to(ROOT)}: {n}" for n in set(named) - in_config - elsewhere)
    assert not astray, "settings the docs name that console/config.py does not read:\n" + "\n".join(astray)


def test_every_file_the_docs_name_exists():
    missing = []
    for document in DOCUMENTS:
        for span in code_spans(document):
            if not re.fullmatch(r"(?:console|tests|templates|static|bench|docs)/[^\s<>*]*", span):
                continue  # not a path, or a pattern (`console/web/<feature>/`, `docs/screenshots/*.png`)
            path = re.split(r"::|:", span)[0]  # `tests/x.py::test_y`, `console/serving.py:batch_scheduling`
            if not (ROOT / path).exists():
                missing.append(f"{document.relative_to(ROOT)}: {span}")
    assert not missing, "files the docs name that do not exist:\n" + "\n".join(missing)


def _module_source(parts: list[str]) -> tuple[str, list[str]] | None:
    """The source of the longest module or package `parts` starts with, and the names after it."""
    for end in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:end])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate.read_text(), parts[end:]
    return None


def module_references(path: Path) -> list[str]:
    """`console.x.y` and `bench.x` in a document's code spans, and what `python -m` runs in its code."""
    text = path.read_text()
    found = [m.group(1) for s in code_spans(path) if (m := re.match(r"((?:console|bench)(?:\.\w+)+)", s))]
    return found + re.findall(r"python3? -m ((?:console|bench)(?:\.\w+)+)", text)


def test_every_module_and_name_the_docs_name_exists():
    """`console.x.y`, `bench.x` and `console.x.y.name` (a function, class or constant of the module) exist, and
    so does what `python -m` runs; a string the code uses under that name (the environ key `console.in_process`)
    counts too."""
    known = _code()
    assert "bench.console_pages" in module_references(DOCS / "console.md")  # the parsing still finds them
    missing = []
    for document in DOCUMENTS:
        for reference in module_references(document):
            if f'"{reference}"' in known:
                continue
            found = _module_source(reference.split("."))
            defined = found is not None and (
                not found[1]
                or re.search(
                    rf"^\s*(?:(?:async )?def |class )?{found[1][0]}\b|import .*\b{found[1][0]}\b",
                    found[0],
                    flags=re.MULTILINE,
                )
            )
            if not defined:
                missing.append(f"{document.relative_to(ROOT)}: {reference}")
    assert not missing, "modules or names the docs name that do not exist:\n" + "\n".join(missing)


def test_the_delivery_settings_webhooks_md_calls_app_config_only_are_not_read_from_the_environment():
    """webhooks.md lists the worker's settings in two groups; one it called "app.config only" (tests and
    benchmarks), WEBHOOK_RESERVED_SHARE, is read from the environment (operations.md's table has it)."""
    text = " ".join((DOCS / "webhooks.md").read_text().split())
    start = text.index("in `app.config` only")
    only_config = set(re.findall(r"`([A-Z_]+)`", text[start : text.index("Measured throughput", start)]))
    assert "WEBHOOK_CLAIM_BATCH" in only_config  # the parsing still finds the list
    read = settings_read_in((ROOT / "console" / "config.py").read_text())
    assert not sorted(only_config & read), "read from the environment after all"
