"""Headless completion: drive a token's Link flow from one JSON body, step by step, without a browser.

It calls exactly the steps the screens call, so it creates the same account, job and events. A flow
stopped by an error (wrong password, wrong code) resumes at that step on the next call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import ConfigDict
from pydantic_core import InitErrorDetails

from console.core.bodies import RequestModel, field_error, integer, one_of, text, validate
from console.link import models as m
from console.link.flow import MFA_METHODS, Flow, LinkError, StaleStep, load
from console.link.outcomes import AMOUNT, FULL, PERCENT
from console.link_tokens.models import LinkToken
from console.link_tokens.validation import MAX_AMOUNT_CENTS, MAX_TARGETS
from console.world import services as world
from console.world.models import BENEFITS

MAX_TEXT = 200
S = TypeVar("S")


class Credentials(RequestModel):
    username: text(MAX_TEXT, blank=True)
    password: text(MAX_TEXT, blank=True)


class Mfa(RequestModel):
    method: (
        one_of(
            MFA_METHODS,
            description="Platform matching: one of the methods offered (default: the first). Otherwise, "
            "when given, the login's own method.",
        )
        | None
    ) = None
    code: text(MAX_TEXT, blank=True) | None = None


class CompletionAllocation(RequestModel):
    # The schema says what `presence_rules` enforces: a (non-null) value needs type amount or percent.
    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"value": {"type": "integer"}}, "required": ["value"]},
            "then": {"properties": {"type": {"enum": [AMOUNT, PERCENT]}}, "required": ["type"]},
        }
    )

    type: one_of((FULL, AMOUNT, PERCENT)) = FULL
    value: integer(1, MAX_AMOUNT_CENTS, description="Cents for amount, whole percent for percent.") | None = (
        None
    )
    target_index: integer(0, MAX_TARGETS - 1, description="Which of the token's accounts.") = 0

    @classmethod
    def presence_rules(cls, data: dict[str, Any]) -> list[InitErrorDetails]:
        # A value beside a full switch (given or by default) was dropped without a word: the caller meant a split.
        if "value" in data and data.get("type", FULL) == FULL:
            return [field_error(("value",), "is only for type amount or percent; a full switch takes none")]
        return []


class Federal(RequestModel):
    first_name: text(MAX_TEXT, blank=True) | None = None
    last_name: text(MAX_TEXT, blank=True) | None = None
    social_security_number: text(MAX_TEXT, blank=True) | None = None


class CompletionRequest(RequestModel):
    """POST /v1/sandbox/link_tokens/{id}/complete: only the parts a step needs are read."""

    platform_id: text(MAX_TEXT, description="A platform id (see /v1/platforms).") | None = None
    employer_id: text(MAX_TEXT, description="An employer id (see /v1/employers).") | None = None
    program_id: text(MAX_TEXT, description="A federal benefits program (a platform id).") | None = None
    matched_platform_id: text(MAX_TEXT, description="One of the platforms matching found.") | None = None
    credentials: Credentials | None = None
    mfa: Mfa | None = None
    allocation: CompletionAllocation | None = None
    federal: Federal | None = None


def _need(section: S | None, code: str, message: str) -> S:
    if section is None:
        raise LinkError(code, message, recoverable=True)
    return section


def _choose_match(flow: Flow, body: CompletionRequest) -> None:
    chosen = body.matched_platform_id or body.platform_id
    if not chosen:
        ids = ", ".join(x["platform_id"] for x in flow.row.matched_platforms or [])
        raise LinkError(
            "MATCHED_PLATFORM_REQUIRED", f"Name matched_platform_id, one of: {ids}.", recoverable=True
        )
    flow.choose_match(str(chosen))


def _choose_method(flow: Flow, body: CompletionRequest) -> None:
    method = body.mfa.method if body.mfa else None
    offered = flow.mfa_options()
    if method is not None and method not in offered:
        # Link's method screen lists only these; its own message ("Choose one of the listed ...") names none.
        raise LinkError(
            "INVALID_MFA_METHOD",
            f"mfa.method {method} is not offered for this platform: send one of {', '.join(offered)} "
            "(or leave it out for the first).",
            recoverable=True,
        )
    flow.choose_mfa_method(method or offered[0])


def _select(flow: Flow, body: CompletionRequest) -> None:
    if body.employer_id:
        flow.select("employer", body.employer_id)
    elif body.program_id:
        program = world.get_platform(body.program_id)
        if program is not None and program.type != BENEFITS:
            # Link would open this platform's login, and the call would then ask for credentials: say why.
            raise LinkError(
                "INVALID_SELECTION",
                f"program_id {body.program_id} is a payroll platform ({program.name}), not a federal benefits "
                "program: send it as platform_id, or name a program (GET /v1/platforms?type=benefits lists them).",
                recoverable=True,
            )
        flow.select("platform", body.program_id)
    elif body.platform_id:
        flow.select("platform", body.platform_id)
    else:
        raise LinkError(
            "PLATFORM_REQUIRED",
            "Name the platform_id, employer_id or (federal benefits) program_id the person would choose.",
            recoverable=True,
        )


def _login(flow: Flow, body: CompletionRequest) -> None:
    creds = _need(body.credentials, "CREDENTIALS_REQUIRED", "Give credentials {username, password}.")
    flow.login(creds.username, creds.password)


def _mfa(flow: Flow, body: CompletionRequest) -> None:
    method = flow.row.mfa_method
    mfa = _need(body.mfa, "MFA_REQUIRED", f"This login asks for a {method} code: give mfa {{code}}.")
    if mfa.method is not None and mfa.method != method:
        # The method is the account's (a sandbox user_mfa_* user's, or the one chosen on platform matching's
        # method screen), not the caller's: Link's code screen offers no choice. Accepting another one let
        # a CI pass with a method its users never see. Not an attempt: the code was not checked.
        raise LinkError(
            "INVALID_MFA_METHOD",
            f"This login sends its code by {method}, the account's own MFA method (a person cannot choose "
            f"it): send mfa.method {method}, or leave it out.",
            recoverable=True,
        )
    flow.submit_mfa(mfa.code or "")


def _federal(flow: Flow, body: CompletionRequest) -> None:
    federal = _need(
        body.federal,
        "FEDERAL_IDENTITY_REQUIRED",
        "Give federal {first_name, last_name, social_security_number}.",
    )
    allocation = body.allocation
    if allocation is not None and (allocation.type != FULL or allocation.target_index != 0):
        # Link's federal screen offers no split and no choice of account (spec: full allocations only, the
        # token's first account), so a CI asking for either would get a full switch and pass unawares.
        raise LinkError(
            "INVALID_ALLOCATION",
            "A federal benefits switch is always a full switch to the token's first account; "
            "leave allocation out, or send type full with target_index 0.",
            recoverable=True,
        )
    flow.submit_federal(
        federal.first_name or "", federal.last_name or "", federal.social_security_number or ""
    )


def _allocation(flow: Flow, body: CompletionRequest) -> None:
    allocation = body.allocation or CompletionAllocation()
    if allocation.type != FULL:
        # Link's screen offers no split here, so a CI asking for one would get a full switch and pass unawares.
        if flow.token.preconfigured_allocation:
            raise LinkError(
                "INVALID_ALLOCATION",
                "This Link token's allocation is set by the token (allocation on POST /v1/link_tokens); "
                "leave allocation out, or send type full to pick the target account.",
                recoverable=True,
            )
        if flow.token.disable_direct_deposit_splitting:
            raise LinkError(
                "INVALID_ALLOCATION",
                "This Link token offers only a full switch (disable_direct_deposit_splitting is true); "
                "leave allocation out, or send type full.",
                recoverable=True,
            )
    accounts = len(flow.token.targets)
    if allocation.target_index >= accounts:
        # Link's own wording ("Enter which account to use") names no range; a CI needs it.
        raise LinkError(
            "INVALID_ALLOCATION",
            f"target_index {allocation.target_index} is past this Link token's accounts: it has {accounts} "
            f"(allocation.targets), so target_index is 0 to {accounts - 1}.",
            recoverable=True,
        )
    flow.choose_allocation(allocation.type, allocation.value, allocation.target_index)


STEPS: dict[str, Callable[[Flow, CompletionRequest], None]] = {
    m.INTRO: lambda flow, body: flow.accept_terms(),
    m.MATCHING_WAIT: lambda flow, body: flow.finish_matching(),
    m.MATCHES: _choose_match,
    m.MFA_METHOD: _choose_method,
    m.SEARCH: _select,
    m.LOGIN: _login,
    m.MFA: _mfa,
    m.FEDERAL: _federal,
    m.ALLOCATION: _allocation,
    m.CONFIRM: lambda flow, body: flow.confirm(),
}


# Why a flow is already on a platform, by the token's route; otherwise it was chosen among matches or on search.
CHOSEN_BY = {
    m.DIRECT: "the Link token's platform_id or employer_id routes straight to it",
    m.UPDATE: "the Link token's account_id (an on-demand update) routes straight to it",
}


def _refuse_another_choice(flow: Flow, body: CompletionRequest) -> None:
    """A body naming another platform than the one the flow is already on is refused, not ignored.

    Once a platform is chosen (by the token's routing, among matches, or on search), no step reads platform_id,
    employer_id or program_id again, so a CI sending another one made the switch on the first platform and
    passed unawares. Naming the same platform (or an employer on it) is fine.
    """
    row = flow.row
    if row.platform_id is None or row.state == m.SEARCH:
        return
    for name, ident in (
        ("platform_id", body.platform_id),
        ("program_id", body.program_id),
        ("employer_id", body.employer_id),
    ):
        if ident is None:
            continue
        if name == "employer_id":
            employer = world.get_employer(ident)
            same = employer is not None and employer.platform_id == row.platform_id
        else:
            same = ident.strip().lower() == str(row.platform_id)
        if same:
            continue
        why = CHOSEN_BY.get(row.route) or (
            "it is the matched platform chosen (matched_platform_id)"
            if row.via_platform_matching
            else "it was chosen on search (by a platform_id, employer_id or program_id, in this call or an earlier one)"
        )
        raise LinkError(
            "INVALID_SELECTION",
            f"{name} {ident} is not the platform this flow is on: it is on {flow.platform.name} "
            f"(platform_id {row.platform_id}), since {why}. Leave {name} out to go on there, or create a new "
            "Link token to choose another.",
            recoverable=True,
        )


def _ended(flow: Flow) -> LinkError:
    if flow.row.state == m.EXPIRED:
        return LinkError("LINK_TOKEN_EXPIRED", "This Link token has expired.", recoverable=False)
    return LinkError(
        "LINK_TOKEN_ALREADY_USED",
        f"This Link token's flow has already ended ({flow.row.state}); create a new token.",
        recoverable=False,
    )


def complete(link_token: LinkToken, body: Any) -> tuple[Flow, list[dict[str, Any]]]:
    """Run the flow to its end; returns the flow and the client events the SDK would have seen.

    Raises LinkError with the code Link would have shown. The caller commits either way, so what
    happened (attempts, a terminal error, erased matching data) is kept exactly as in Link.
    """
    # A malformed part is a request error whichever step would read it.
    request = validate(CompletionRequest, body)
    flow = load(link_token)
    flow.raise_if_error()  # expired just now
    if flow.row.finished:
        raise _ended(flow)
    events = list(flow.events)
    for _ in range(3 * len(STEPS)):
        if flow.row.finished:
            break
        flow.events = []
        try:
            # Before each step, not once: a token's routing chooses its platform on the intro step.
            _refuse_another_choice(flow, request)
            STEPS[flow.row.state](flow, request)
        except StaleStep:
            raise _ended(flow) from None
        events.extend(flow.events)
        if flow.row.job_id is not None:
            break  # the switch was submitted: an immediate job error is an outcome, not a request error
        flow.raise_if_error()
    return flow, events
