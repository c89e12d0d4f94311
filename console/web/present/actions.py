"""What a story step does: a small vocabulary of actions, each a real call of the console's API client
(logged in the request log, so the stage shows it) or a change of the workspace's own inbox.

An action either returns an `Outcome` or raises `ActionFailed` with a sentence for the audience's
screen; the stage never shows a traceback or a raw response body.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import current_app
from sqlalchemy import func, select

from console.clock.moves import MAX_ADVANCE
from console.events.models import EVENT_TYPES
from console.extensions import db
from console.presenter.stories import did_you_mean
from console.web.link import form as linkform
from console.web.link import guide as linkguide
from console.web.link import tokens as linktokens
from console.web.scenarios import gallery as scenarios
from console.web.shared import fielderrors
from console.web.shared.apiclient import response_json
from console.web.shared.pageslots import slot_released
from console.web.shared.workspace_session import api_client
from console.web.walkthrough import checklist as walkthrough
from console.web.webhooks import inbox
from console.web.webhooks.models import InboxMessage
from console.workspaces.models import Workspace

# The request log's step name for the stage's calls.
STEP = "presenter"
ORIGIN = "presenter"
CLOCK_UNITS = ("business_days", "days", "hours", "seconds")
INBOX_BEHAVIOURS = (inbox.OK, inbox.FAIL)
# How long wait_for_event looks for a delivery (real seconds; the worker delivers within one or two).
DEFAULT_WAIT_SECONDS = 8.0
MAX_WAIT_SECONDS = 30.0
POLL_SECONDS = 0.25


@dataclass(frozen=True)
class Outcome:
    summary: str  # one line for the presenter's notes
    open_link: bool = False  # Link belongs open in the phone from this step (the stage renders its token)


class ActionFailed(Exception):
    """A step that did not do what it says; the message is shown on the stage with a retry."""


def _failed_call(what: str, row) -> ActionFailed:
    return ActionFailed(f"{what} was refused by the API ({row.status}): {fielderrors.message_of(row)}")


def _newest_token(workspace: Workspace) -> linktokens.Kept:
    kept = linktokens.newest(workspace.id)
    if kept is None:
        # A story file always creates one first (checked when it is read): the stage was opened mid-story (a
        # bookmark, yesterday's address) in a browser whose run never got there. It said "a create_link_token step
        # must come first", a story writer's words, to the room.
        raise ActionFailed(
            "This run has no Link token yet: the story was opened midway rather than run from its start. "
            "Press r, then → to run it from the beginning."
        )
    return kept


def create_link_token(workspace: Workspace, preset: str, org_name: str | None = None) -> Outcome:
    """The preset's token; `org_name` (the prospect on the stage) is the name Link shows the person."""
    body = linkform.preset_body(preset)
    if preset == "on_demand":
        choice = walkthrough.on_demand_choice(workspace.id)
        if choice is None:
            raise ActionFailed("An on-demand update needs a connected account: run a switch first.")
        body = linkform.preset_body(
            preset, account_id=choice.account_id, platform_matching=choice.platform_matching
        )
    if org_name:
        body["org_name"] = org_name
    row = api_client(workspace).call("POST", "/link_tokens", body=body, step=STEP)
    data = (response_json(row) or {}).get("data") or {}
    if row.status != 200 or not data.get("id") or not data.get("token"):
        raise _failed_call("Creating the Link token", row)
    linktokens.remember(workspace.id, data["id"], data["token"], ORIGIN)
    db.session.commit()
    return Outcome(f"Link token {data['id']} created ({preset})")


def open_link(workspace: Workspace) -> Outcome:
    kept = _newest_token(workspace)
    view = linkguide.view(workspace, kept.link_token_id, kept.token, kept.origin)
    # Unused, or open and not finished (the presenter pressed Continue, then ← and → again): Link resumes at its
    # screen, as after a reload. Only an open Link was refused here, with a retry that could never work.
    if view is None or view.state.kind not in (linkguide.UNUSED, linkguide.OPEN):
        raise ActionFailed("The newest Link token was already used or has expired: create a new one first.")
    return Outcome("Link opens in the app", open_link=True)


def complete_link(workspace: Workspace, scenario: str) -> Outcome:
    found = scenarios.get(scenario)
    if found is None:  # checked when the story is read; a story file edited since is caught here
        raise ActionFailed(f"Unknown scenario {scenario!r}.")
    kept = _newest_token(workspace)
    view = linkguide.view(workspace, kept.link_token_id, kept.token, kept.origin)
    if view is not None and view.state.kind == linkguide.FINISHED:
        # The presenter took over and finished Link by hand in the phone: the story follows.
        return Outcome("Link was completed in the phone")
    path = f"/sandbox/link_tokens/{kept.link_token_id}/complete"
    row = api_client(workspace).call("POST", path, body=found.completion, step=STEP)
    if row.status != 200:
        raise _failed_call("Completing Link", row)
    return Outcome(f"Link completed as {found.title}")


def advance_clock(workspace: Workspace, **amount: Any) -> Outcome:
    client = api_client(workspace)
    if amount.get("next"):
        row = client.call("POST", "/sandbox/clock/advance_to_next", body={}, step=STEP)
        what = "to the next scheduled item"
    else:
        unit, value = next(iter(amount.items()))
        row = client.call("POST", "/sandbox/clock/advance", body={unit: value}, step=STEP)
        what = f"by {value} {unit.replace('_', ' ')}"
    if row.status != 200:
        raise _failed_call("Moving the clock", row)
    return Outcome(f"Clock moved {what}")


def set_inbox_behaviour(workspace: Workspace, behaviour: str) -> Outcome:
    inbox.set_behaviour(workspace.id, behaviour)
    db.session.commit()
    return Outcome(
        f"The backend's webhook receiver now answers {'500' if behaviour == inbox.FAIL else '200 OK'}"
    )


ACCEPTED = (inbox.OK, inbox.SLOW)


def _messages(workspace: Workspace, event_type: str, answered: tuple[str, ...]):
    """Verified first deliveries of an event type, answered as `answered` (the inbox's mode then)."""
    return select(InboxMessage.event_id).where(
        InboxMessage.workspace_id == workspace.id,
        InboxMessage.event_type == event_type,
        InboxMessage.verified.is_(True),
        func.coalesce(InboxMessage.behaviour, inbox.OK).in_(answered),
    )


def verified_count(
    workspace: Workspace, event_type: str, refused: bool = False, redelivered: bool = False
) -> int:
    """Events of a type whose verified delivery the inbox accepted (answered 200); with `refused`, those it
    answered 500 while set to fail; with `redelivered`, those accepted after having been refused."""
    if refused:
        query = _messages(workspace, event_type, (inbox.FAIL,))
    else:
        query = _messages(workspace, event_type, ACCEPTED)
        if redelivered:
            query = query.where(InboxMessage.event_id.in_(_messages(workspace, event_type, (inbox.FAIL,))))
    return db.session.scalar(select(func.count(func.distinct(query.subquery().c.event_id)))) or 0


def _not_accepted(workspace: Workspace, event_type: str) -> bool:
    """Some verified delivery of the type was answered 500 or past the sender's timeout."""
    found = db.session.scalar(
        select(func.count()).select_from(
            _messages(workspace, event_type, (inbox.FAIL, inbox.TIMEOUT)).subquery()
        )
    )
    db.session.rollback()
    return bool(found)


def _looked_for(type: str, refused: bool, redelivered: bool) -> str:
    if refused:
        return f"refused {type} webhook"
    return f"{type} webhook delivered again after a refusal" if redelivered else f"verified {type} webhook"


def wait_for_event(
    workspace: Workspace, type: str, count: int = 1, refused: bool = False, redelivered: bool = False
) -> Outcome:
    """Look for the event in the inbox for a few real seconds (the worker delivers it), never longer."""
    limit = min(
        float(current_app.config.get("PRESENTER_WAIT_SECONDS", DEFAULT_WAIT_SECONDS)), MAX_WAIT_SECONDS
    )
    deadline = time.monotonic() + limit
    while True:
        found = verified_count(workspace, type, refused, redelivered)
        db.session.rollback()  # end the read, so the next look sees what the worker committed
        if found >= count:
            return Outcome(f"{_looked_for(type, refused, redelivered)} arrived")
        if time.monotonic() >= deadline:
            if not refused and _not_accepted(workspace, type):
                # The receiver is slow or failing: the webhook did arrive, and the sender will retry it. "Is the
                # worker running?" sent the presenter looking for the wrong problem, the panel showing it arrive.
                raise ActionFailed(
                    f"The {type} webhook reached the backend, but its receiver did not accept it (it answered "
                    "500 or too late): the sender will retry. Set the receiver to answer 200, move the clock "
                    "ahead, then retry the step."
                )
            raise ActionFailed(
                f"No {_looked_for(type, refused, redelivered)} has arrived yet (looked for {limit:g} s). "
                "Is the worker running? Retry the step."
            )
        with slot_released():  # another page may run meanwhile
            time.sleep(POLL_SECONDS)


def _one_of(name: str, allowed) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, str) and value in allowed:
            return None
        return f"{name} must be one of {', '.join(allowed)}, not {value!r}{did_you_mean(value, allowed)}"

    return check


def _unexpected(args: dict[str, Any], allowed) -> str:
    """'does not take 'x' (did you mean 'y'?)' for the first argument a step's action does not take."""
    extra = sorted(k for k in args if k not in allowed)[0]
    return f"does not take {extra!r}{did_you_mean(extra, allowed)}"


# The clock moves at most MAX_ADVANCE at once (the API refuses more): a story asking for more failed only on the
# stage. Business days are counted on the calendar with weekends and holidays: 260 (a year's) stay within it.
CLOCK_MOST = {
    "seconds": MAX_ADVANCE.total_seconds(),
    "hours": MAX_ADVANCE.total_seconds() / 3600,
    "days": float(MAX_ADVANCE.days),
    "business_days": 260,
}


def _check_clock(args: dict[str, Any]) -> str | None:
    given = [k for k in args if k in (*CLOCK_UNITS, "next")]
    if len(given) != 1 or len(args) != 1:
        extra = [k for k in args if k not in (*CLOCK_UNITS, "next")]
        if extra:
            return _unexpected(args, (*CLOCK_UNITS, "next"))
        return f"give exactly one of {', '.join(CLOCK_UNITS)} or next"
    unit = given[0]
    value = args[unit]
    if unit == "next":
        return None if value is True else "next must be true"
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        return f"{unit} must be a positive number"
    if unit == "business_days" and not isinstance(value, int):
        return "business_days must be a whole number"
    if value > CLOCK_MOST[unit]:
        return f"{unit} must be at most {CLOCK_MOST[unit]:g} (the clock moves at most {MAX_ADVANCE.days} days at once)"
    return None


WAIT_ARGUMENTS = ("type", "count", "refused", "redelivered")
MAX_WAIT_COUNT = 50  # more events than a story's switches send: the step could only time out on the stage


def _check_wait(args: dict[str, Any]) -> str | None:
    if set(args) - set(WAIT_ARGUMENTS):
        return (
            f"{_unexpected(args, WAIT_ARGUMENTS)}: takes type, and optionally count, refused or redelivered"
        )
    for flag in ("refused", "redelivered"):
        if not isinstance(args.get(flag, False), bool):
            return f"{flag} must be true or false"
    if args.get("refused") and args.get("redelivered"):
        return "give refused or redelivered, not both"
    if "type" not in args:
        return f"needs type, one of {', '.join(EVENT_TYPES)}"
    problem = _one_of("type", EVENT_TYPES)(args["type"])
    if problem:
        return problem
    count = args.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_WAIT_COUNT:
        return f"count must be a whole number from 1 to {MAX_WAIT_COUNT}"
    return None


def _exactly(name: str, check: Callable[[Any], str | None]) -> Callable[[dict], str | None]:
    def checker(args: dict[str, Any]) -> str | None:
        if set(args) - {name}:
            return f"{_unexpected(args, (name,))}: takes exactly {name}"
        if name not in args:
            return f"takes exactly {name}, and it is missing"
        return check(args[name])

    return checker


def _no_arguments(args: dict[str, Any]) -> str | None:
    return f"takes no arguments, not {', '.join(sorted(args))}" if args else None


def _scenario_known(value: Any) -> str | None:
    if isinstance(value, str) and scenarios.get(value) is not None:
        return None
    keys = [s.key for s in scenarios.all_scenarios(with_steps=False)]
    hint = did_you_mean(value, keys) or " (e.g. user_good)"
    return f"scenario {value!r} is not a key of the scenario gallery (/scenarios){hint}"


# A scenario's answers complete only some tokens (the API refuses the rest with a 400, on the stage): by the preset
# the scenario's own row is built from, the token presets it cannot complete, and the presets that fit. Found by
# completing every preset with every kind of scenario; an on_demand token takes any.
_PRIME_ONLY = frozenset(linkform.PRESET_KEYS) - {"on_demand"}
MISFITS = {
    "prime_one": (_PRIME_ONLY - {"prime_one"}, "prime_one"),
    "prime_several": (_PRIME_ONLY - {"prime_several"}, "prime_several"),
    "federal": (frozenset({"direct", "prime_one", "prime_several"}), "federal or standard"),
}
CREDENTIALS_MISFIT = (frozenset({"prime_one", "prime_several", "federal"}), "standard or direct")


def scenario_misfit(preset: str, scenario: str) -> str | None:
    """Why the scenario's answers cannot complete a token of `preset`, or None when they can."""
    found = scenarios.get(scenario)
    if found is None:
        return None  # named by the argument check
    refused, fits = MISFITS.get(found.preset, CREDENTIALS_MISFIT)
    if preset not in refused:
        return None
    return (
        f"scenario {scenario!r} cannot complete a {preset} token (the API would refuse it): use preset {fits}"
    )


# name -> (function, argument check). The check runs when a story is read, so a bad file is reported
# before the demo rather than during it.
ACTIONS: dict[str, tuple[Callable[..., Outcome], Callable[[dict], str | None]]] = {
    "create_link_token": (
        create_link_token,
        _exactly("preset", _one_of("preset", sorted(linkform.PRESET_KEYS))),
    ),
    "open_link": (open_link, _no_arguments),
    "complete_link": (complete_link, _exactly("scenario", _scenario_known)),
    "advance_clock": (advance_clock, _check_clock),
    "set_inbox_behaviour": (
        set_inbox_behaviour,
        _exactly("behaviour", _one_of("behaviour", INBOX_BEHAVIOURS)),
    ),
    "wait_for_event": (wait_for_event, _check_wait),
}


def argument_checks() -> dict[str, Callable[[dict], str | None]]:
    """Each action's argument check, for `console.presenter.stories` to judge a story file when it is read."""
    return {name: check for name, (_function, check) in ACTIONS.items()}


def perform(
    workspace: Workspace, action: str | None, arguments: dict[str, Any], *, org_name: str | None = None
) -> Outcome | None:
    """Run one step's action (None for a caption-only step); `org_name` brands the Link tokens it creates."""
    if action is None:
        return None
    function, _check = ACTIONS[action]
    if action == "create_link_token" and org_name:
        return function(workspace, **arguments, org_name=org_name)
    return function(workspace, **arguments)
