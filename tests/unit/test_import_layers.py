"""The app's modules import one another one way only: no module imports, even lazily inside a function,
a module that imports it back (directly or through others).

Circles were how layers leaked into each other (the clock and the scheduler, events and webhooks, the Link
flow and its outcomes); a lazy import hid each one. A name imported from a package's `__init__` counts as
an import of the package; a submodule imported through its package counts as an import of that submodule.
The app factory (`console`, `create_app`) is the composition root: it wires everything together, and an
entry point that builds the app (`python -m console.webhooks.worker`) imports it; it is left out.
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
    out.discard(module)
    return out


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
