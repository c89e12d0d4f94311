"""What the console says beside Link for one token: the state it is in, and exactly what to enter.

Every value a person types (usernames, password, codes, SSNs, Prime identities) comes from the
sandbox test data (`console.link.sandbox_data`, `console.world.seed_data`) and every screen from the
token's own settings and the Link flow's routing, so the hints cannot drift from what Link accepts.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import select

from console.accounts.models import Account
from console.clock.services import now
from console.extensions import db
from console.jobs.models import Job
from console.jobs.plans import PENDING, PROCESSING
from console.link import checks, sandbox_data
from console.link import models as m
from console.link.flow import route_of
from console.link.models import LinkSession
from console.link.presenters import ERROR_TITLES
from console.link_tokens.models import LinkToken
from console.workspaces.models import Workspace
from console.world.models import BENEFITS, Employer, Platform
from console.world.seed_data import PLATFORM_IDS, SANDBOX_MATCH_EXPECTED, SANDBOX_MATCH_IDENTITIES

UNUSED, OPEN, FINISHED, EXPIRED = "unused", "open", "finished", "expired"
# The example a hint names when the person has to pick a benefits program themselves.
EXAMPLE_PROGRAM = "ssa-retirement"
EXAMPLE_LEGAL_NAME = ("Alex", "Doe")
# Each screen as the hints call it (Link's own headings name the organisation and platform).
SCREENS = {
    m.INTRO: "intro",
    m.MATCHING_WAIT: "matching",
    m.MATCHES: "matched accounts",
    m.MFA_METHOD: "verification method",
    m.SEARCH: "search",
    m.LOGIN: "login",
    m.MFA: "verification code",
    m.FEDERAL: "identity (legal name and SSN)",
    m.ALLOCATION: "allocation",
    m.CONFIRM: "confirmation",
}
OUTCOMES = {m.DONE: "completed", m.FAILED: "ended on an error", m.EXITED: "closed before the end"}


@dataclass(frozen=True)
class TokenState:
    kind: str  # unused | open | finished | expired
    text: str  # one sentence for people
    can_open: bool  # Link would show something other than its end screen


@dataclass(frozen=True)
class Guide:
    """What to tell the person beside Link: the first screen and each thing to enter, in order."""

    opening: str
    steps: tuple[str, ...]


def _platform_name(platform_id) -> str:
    platform = db.session.get(Platform, platform_id) if platform_id else None
    return platform.name if platform else "the platform"


def state(
    link_token: LinkToken, session: LinkSession | None, at: datetime, waiting_job: Job | None = None
) -> TokenState:
    """Unused, open (at which screen), finished (with its outcome) or expired, on the workspace clock.

    `waiting_job`: the token's job still pending or processing. "The flow completed" alone read as done, while
    the switch waits for a retry or an agency review the workspace clock can reach now."""
    if (session is not None and session.state == m.EXPIRED) or (
        at >= link_token.expires_at and (session is None or not session.finished)
    ):
        return TokenState(EXPIRED, "Expired: Link would only say so. Create a new token.", False)
    if session is None:
        minutes = max(1, int((link_token.expires_at - at).total_seconds() // 60))
        return TokenState(UNUSED, f"Unused: ready to open (expires in {minutes} min).", True)
    if not session.finished:
        screen = SCREENS.get(session.state, session.state)
        return TokenState(OPEN, f"Open: Link resumes at its {screen} screen.", True)
    outcome = OUTCOMES.get(session.state, session.state)
    if session.error_code:
        outcome += f" ({ERROR_TITLES.get(session.error_code, session.error_code)}, {session.error_code})"
    text = f"Finished: the flow {outcome}. A token is used once; create a new one to run it again."
    if waiting_job is not None:
        what = "retried" if waiting_job.outcome == PENDING else "reviewed by the agency"
        text += (
            f" Its {waiting_job.name} job is {waiting_job.outcome}: it is {what} on the workspace clock; its"
            " timeline says when, and moving the clock gets there now."
        )
    return TokenState(FINISHED, text, False)


def opening(skip_intro: bool, route: str, platform_name: str | None) -> str:
    """What Link shows first, as the flow decides it (platform matching always keeps the intro)."""
    if skip_intro and route != m.MATCHING:
        if route == m.STANDARD:
            return "Link opens at the search (skip_intro_screen is set)."
        return f"Link opens at {platform_name or 'the platform'} (skip_intro_screen is set)."
    return "Link opens at its intro: press Continue."


def login_steps(username: str = "user_good") -> tuple[str, ...]:
    user = sandbox_data.user(username)
    steps = [f"Username {username}, password {sandbox_data.PASSWORD}"]
    if user is not None and user.mfa_method:
        steps.append(f"{user.mfa_method.upper()} code {sandbox_data.MFA_CODE}")
    return tuple(steps)


def other_users() -> str:
    others = [u for u in sandbox_data.USERS if u != "user_good"]
    return "Other outcomes: username " + ", ".join(others) + " (same password; all on Scenarios)."


def federal_ssn_choices() -> str:
    """The federal test SSNs as one sentence's list: "900000001 (accepted: …), 900000002 (…) or 900000003 (…)".

    Each description is a sentence of its own in the test data; here it becomes a parenthesis (no full stop
    inside, lower-case start), so the choices read as one sentence, never "later.; 900000002: …"."""
    items = [
        f"{ssn} ({description.rstrip('.')[:1].lower()}{description.rstrip('.')[1:]})"
        for ssn, (_scenario, description) in sandbox_data.FEDERAL_SSNS.items()
    ]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def federal_steps() -> tuple[str, ...]:
    first, last = EXAMPLE_LEGAL_NAME
    return (
        f"Any legal name (e.g. {first} {last})",
        f"SSN {federal_ssn_choices()}. Any other 9-digit SSN finds no beneficiary.",
        "Confirm",
    )


def _matching_case(identity: dict[str, Any] | None) -> str | None:
    if not identity:
        return None
    ssn = identity.get("social_security_number")
    return next(
        (case for case, known in SANDBOX_MATCH_IDENTITIES.items() if known["social_security_number"] == ssn),
        None,
    )


def _update_steps(token: LinkToken) -> tuple[str, ...]:
    account = db.session.get(Account, token.account_id)
    if account is None:
        return ("The account no longer exists: Link will say so.",)
    platform = db.session.get(Platform, account.platform_id)
    if platform is not None and platform.type == BENEFITS:
        return (f"{platform.name}: the identity is entered again", *federal_steps())
    login = checks.check_update(token.mode, account)
    steps = [f"No login: Link goes straight to {account.platform_name}"]
    if login.error == checks.ACCOUNT_LOCKED:
        steps.append("The account is locked: Link shows the locked screen")
        return tuple(steps)
    if login.choose_mfa_method:
        steps.append(f"Pick any verification method, then code {sandbox_data.MFA_CODE}")
    elif login.mfa_method:
        steps.append(f"{login.mfa_method.upper()} code {sandbox_data.MFA_CODE}")
    return (*steps, "Choose an allocation and confirm")


def _matching_steps(identity: dict[str, Any] | None) -> tuple[str, ...]:
    case = _matching_case(identity)
    if case is None:
        return (
            "Accept the terms; Link matches the identity sent against the sandbox world",
            "If nothing matches, search Paycrest and log in: " + login_steps()[0],
        )
    names = [_platform_name(PLATFORM_IDS[slug]) for slug in SANDBOX_MATCH_EXPECTED[case]]
    if not names:
        return (
            "Accept the terms (Continue)",
            "Nothing matches: Link falls back to the search; search Paycrest",
            login_steps()[0],
            "Choose an allocation and confirm",
        )
    pick = (
        f"Link finds {names[0]}: choose it"
        if len(names) == 1
        else "Link finds " + ", ".join(names) + ": choose one"
    )
    return (
        "Accept the terms (Continue)",
        pick,
        f"Pick any verification method, then code {sandbox_data.MFA_CODE}",
        "Choose an allocation and confirm",
    )


def steps_for(token: LinkToken) -> tuple[str, ...]:
    """Everything to enter in Link for this token, in order."""
    route = route_of(token)
    if route == m.UPDATE:
        return _update_steps(token)
    if route == m.MATCHING:
        return _matching_steps(token.platform_matching)
    if route == m.DIRECT:
        platform = db.session.get(Platform, token.platform_id) if token.platform_id else None
        if platform is None and token.employer_id:
            employer = db.session.get(Employer, token.employer_id)
            platform = employer.platform if employer else None
        if platform is not None and platform.type == BENEFITS:
            return (f"{platform.name}: verify the identity", *federal_steps())
        name = platform.name if platform else "the platform"
        return (f"Log in at {name}", *login_steps(), "Choose an allocation and confirm", other_users())
    program = _platform_name(PLATFORM_IDS[EXAMPLE_PROGRAM])
    return (
        "Search an employer or payroll provider, e.g. Paycrest",
        *login_steps(),
        "Choose an allocation and confirm",
        other_users(),
        f"Federal benefits instead: search “{program}”, enter any legal name and the SSN "
        f"{federal_ssn_choices()}.",
    )


def _platform_of(token: LinkToken) -> str | None:
    route = route_of(token)
    if route == m.UPDATE:
        account = db.session.get(Account, token.account_id)
        return account.platform_name if account else None
    if token.platform_id:
        return _platform_name(token.platform_id)
    if token.employer_id:
        employer = db.session.get(Employer, token.employer_id)
        return employer.platform.name if employer else None
    return None


def guide_for(token: LinkToken) -> Guide:
    return Guide(opening(token.skip_intro_screen, route_of(token), _platform_of(token)), steps_for(token))


def opening_for_body(body: dict[str, Any], platform_name: str | None = None) -> str:
    """What Link shows first for a request body (before any token exists), e.g. for a scenario row."""
    shape = SimpleNamespace(
        account_id=body.get("account_id"),
        platform_id=body.get("platform_id"),
        employer_id=body.get("employer_id"),
        platform_matching=(body.get("end_user") or {}).get("platform_matching"),
    )
    return opening(bool(body.get("skip_intro_screen")), route_of(shape), platform_name)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TokenView:
    """One console-created token as step 4 and the launcher show it."""

    link_token_id: str
    token: str
    state: TokenState
    guide: Guide
    origin: str | None  # "preset:<key>" or "scenario:<key>": what "Create a new token" repeats


def view(workspace: Workspace, link_token_id: str, token: str, origin: str | None) -> TokenView | None:
    row = db.session.scalars(
        select(LinkToken).where(
            LinkToken.workspace_id == workspace.id, LinkToken.id == uuid.UUID(link_token_id)
        )
    ).first()
    if row is None:
        return None
    session = db.session.scalars(select(LinkSession).where(LinkSession.link_token_id == row.id)).first()
    waiting = None
    if session is not None and session.finished:
        waiting = db.session.scalars(
            select(Job)
            .where(
                Job.workspace_id == workspace.id,
                Job.mode == row.mode,  # (the index's order: workspace, mode, Link token)
                Job.link_token_id == row.id,
                Job.outcome.in_((PENDING, PROCESSING)),
            )
            .order_by(Job.created_at.desc())
            .limit(1)
        ).first()
    return TokenView(
        link_token_id, token, state(row, session, now(workspace), waiting), guide_for(row), origin
    )
