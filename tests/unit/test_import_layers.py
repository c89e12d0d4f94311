"""The app's modules import one another one way only, and the layers point one way.

No module imports, even lazily inside a function, a module that imports it back (directly or through
others); a domain package imports neither the console (`console.web`) nor the API (`console.api`).
A module loaded by its dotted name (`importlib.import_module("console.x")`, or a string naming
`console.x.Class` that is loaded that way) counts as imported.

Circles were how layers leaked into each other (the clock and the scheduler, events and webhooks, the Link
flow and its outcomes); a lazy import hid each one. A name imported from a package's `__init__` counts as
an import of the package; a submodule imported through its package counts as an import of that submodule.
The app factory (`console`, `create_app`) is the composition root: it wires everything together, and an
entry point that builds the app (`python -m console.webhooks.delivery_loop`) imports it; it is left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules() -> dict[str, Path]:
    found = {}
    for path in (ROOT / "console").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(path: Path, module: str, modules: dict[str, Path]) -> set[str]:
    """Every app module `path` imports, at any depth of its code."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's own package upwards
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                name = f"{base}.{alias.name}"
                if name in modules:
                    out.add(name)
                elif base in modules:
                    out.add(base)
        elif isinstance(node, ast.Call) and _calls_import_module(node):
            for arg in node.args[:1]:
                if isinstance(arg, ast.Constant) and arg.value in modules:
                    out.add(arg.value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.update(_named_attribute(node.value, modules))
    out.discard(module)
    return out


def _calls_import_module(call: ast.Call) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module"
    )


def _named_attribute(text: str, modules: dict[str, Path]) -> set[str]:
    """The module of a dotted `console.a.b.Class` string, which is loaded by importing that module (the
    worker's loops). A string naming just a module (`python -m console.cli`) imports nothing."""
    if not text.startswith("console.") or not all(part.isidentifier() for part in text.split(".")):
        return set()
    module = text.rpartition(".")[0]
    return {module} if module in modules and text not in modules else set()


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


COMPOSITION_ROOT = "console"


def test_no_module_of_the_app_imports_itself_back():
    modules = _modules()
    graph = {
        name: _imports(path, name, modules) - {COMPOSITION_ROOT}
        for name, path in modules.items()
        if name != COMPOSITION_ROOT
    }
    assert _circles(graph) == []


# Packages that hold the service's rules and data; they must not depend on either way in.
DOMAIN_PACKAGES = (
    "accounts",
    "clock",
    "conformance",
    "core",
    "db",
    "events",
    "health",
    "idempotency",
    "jobs",
    "keys",
    "link",
    "link_tokens",
    "presenter",
    "requestlog",
    "scheduler",
    "training",
    "webhooks",
    "workspaces",
    "world",
)
WAYS_IN = ("console.web", "console.api")


def _layer_breaches(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    breaches = []
    for module, imported in sorted(graph.items()):
        if module.split(".")[1:2] and module.split(".")[1] in DOMAIN_PACKAGES:
            for other in sorted(imported):
                if any(other == way or other.startswith(way + ".") for way in WAYS_IN):
                    breaches.append((module, other))
    return breaches


def test_domain_packages_import_neither_the_console_nor_the_api():
    modules = _modules()
    graph = {name: _imports(path, name, modules) for name, path in modules.items()}
    assert _layer_breaches(graph) == []


def test_the_layer_check_sees_a_domain_module_importing_the_console():
    graph = {
        "console.jobs.services": {"console.web.shared.apiclient"},
        "console.web.keys.views": {"console.jobs"},
    }
    assert _layer_breaches(graph) == [("console.jobs.services", "console.web.shared.apiclient")]
    assert _imports_of_source('LOOP = "console.clock.moves.Mover"\n') == {"console.clock.moves"}
    assert _imports_of_source('importlib.import_module("console.clock.moves")\n') == {"console.clock.moves"}
    assert _imports_of_source('COMMAND = ("python", "-m", "console.cli")\n') == set()


def test_the_check_finds_a_circle_through_a_lazy_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]
    source = "def f():\n    from console.clock import moves\n"
    found = _imports_of_source(source)
    assert found == {"console.clock.moves"}


def _imports_of_source(source: str) -> set[str]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "probe.py"
        path.write_text(source)
        return _imports(path, "console.probe", _modules())
