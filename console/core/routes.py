"""`Routes`: the views one module declares, added to a blueprint when the app is built.

Why not `@bp.get` on a shared module-level blueprint: importing a view module would then change the
app's routes. A module's `routes` only records what it declares; the app factory makes each blueprint
and adds the routes of every module it names (`console.api.init_app`, `console.web.init_app`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Route:
    rule: str
    view: Callable[..., Any]
    endpoint: str
    methods: tuple[str, ...]
    # What the blueprint's hooks need to know of this route (e.g. the console's "no_create").
    flags: frozenset[str] = frozenset()


@dataclass
class Routes:
    """What one view module declares: `@routes.get(rule)`, `@routes.post(rule, endpoint=..., flag=True)`."""

    declared: list[Route] = field(default_factory=list)

    def route(self, rule: str, *, methods: tuple[str, ...], endpoint: str | None = None, **flags: bool):
        def declare(view: Callable[..., Any]) -> Callable[..., Any]:
            chosen = frozenset(name for name, on in flags.items() if on)
            self.declared.append(Route(rule, view, endpoint or view.__name__, methods, chosen))
            return view

        return declare

    def get(self, rule: str, **options: Any):
        return self.route(rule, methods=("GET",), **options)

    def post(self, rule: str, **options: Any):
        return self.route(rule, methods=("POST",), **options)

    def put(self, rule: str, **options: Any):
        return self.route(rule, methods=("PUT",), **options)

    def delete(self, rule: str, **options: Any):
        return self.route(rule, methods=("DELETE",), **options)

    def add_to(self, bp: Any) -> None:
        """Add every declared route to the blueprint `bp`."""
        for route in self.declared:
            bp.add_url_rule(route.rule, route.endpoint, route.view, methods=list(route.methods))
