"""What the stage types and presses in Link when it completes Link in the phone (autoplay, or →).

A `complete_link` step names a scenario of the gallery; its answers are the same body the headless
completion sends (`Scenario.completion`), so Link driven on screen ends exactly as the headless path would.
The stage's script (static/present.js) reads this plan from the step's form and answers each Link screen
from it, the way `console.link.headless` answers each flow state: the search text and the result to pick,
the login, the verification method and code, the matched platform, the federal identity, the allocation.
"""

from __future__ import annotations

from typing import Any

from console.presenter.stories import Step
from console.web.scenarios import gallery as scenarios
from console.world import services as world


def _search(completion: dict[str, Any]) -> dict[str, str] | None:
    """What the person types on the search screen and which result they pick (as headless `_select`)."""
    if completion.get("employer_id"):
        kind, ident = "employer", completion["employer_id"]
        found = world.get_employer(ident)
    else:
        ident = completion.get("program_id") or completion.get("platform_id")
        if not ident:
            return None
        kind, found = "platform", world.get_platform(ident)
    if found is None:
        return None
    return {"text": found.name, "kind": kind, "id": str(found.id)}


def plan(step: Step | None) -> dict[str, Any] | None:
    """The answers for a complete_link step, or None for any other step (or an unknown scenario)."""
    if step is None or step.action != "complete_link":
        return None
    found = scenarios.get(step.arguments.get("scenario", ""))
    if found is None:
        return None
    return {
        "scenario": found.key,
        "search": _search(found.completion),
        "completion": found.completion,
    }
