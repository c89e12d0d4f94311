"""Headless completion: drive a token's Link flow from one JSON body, step by step, without a browser.

It calls exactly the steps the screens call, so it creates the same account, job and events. A flow
stopped by an error (wrong password, wrong code) resumes at that step on the next call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from console.core.errors import FieldError, ValidationFailed
from console.link import models as m
from console.link.flow import Flow, LinkError, StaleStep, load
from console.link_tokens.models import LinkToken

KNOWN_FIELDS = {
    "platform_id",
    "employer_id",
    "program_id",
    "matched_platform_id",
    "credentials",
    "mfa",
    "allocation",
    "federal",
}


def _object(body: dict, name: str) -> dict[str, Any] | None:
    value = body.get(name)
    if value is not None and not isinstance(value, dict):
        raise ValidationFailed([FieldError(name, "must be an object")])
    return value


def _text(section: dict, key: str) -> str:
    value = section.get(key)
    return value if isinstance(value, str) else ""


def _need(section: dict | None, code: str, message: str) -> dict:
    if section is None:
        raise LinkError(code, message, recoverable=True)
    return section


def _choose_match(flow: Flow, body: dict) -> None:
    chosen = body.get("matched_platform_id") or body.get("platform_id")
    if not chosen:
        ids = ", ".join(x["platform_id"] for x in flow.row.matched_platforms or [])
        raise LinkError(
            "MATCHED_PLATFORM_REQUIRED", f"Name matched_platform_id, one of: {ids}.", recoverable=True
        )
    flow.choose_match(str(chosen))


def _choose_method(flow: Flow, body: dict) -> None:
    mfa = _object(body, "mfa") or {}
    flow.choose_mfa_method(_text(mfa, "method") or flow.mfa_options()[0])


def _select(flow: Flow, body: dict) -> None:
    if body.get("employer_id"):
        flow.select("employer", str(body["employer_id"]))
    elif body.get("platform_id") or body.get("program_id"):
        flow.select("platform", str(body.get("program_id") or body.get("platform_id")))
    else:
        raise LinkError(
            "PLATFORM_REQUIRED",
            "Name the platform_id, employer_id or (federal benefits) program_id the person would choose.",
            recoverable=True,
        )


def _login(flow: Flow, body: dict) -> None:
    creds = _need(
        _object(body, "credentials"), "CREDENTIALS_REQUIRED", "Give credentials {username, password}."
    )
    flow.login(_text(creds, "username"), _text(creds, "password"))


def _mfa(flow: Flow, body: dict) -> None:
    method = flow.row.mfa_method
    mfa = _need(
        _object(body, "mfa"), "MFA_REQUIRED", f"This login asks for a {method} code: give mfa {{code}}."
    )
    flow.submit_mfa(_text(mfa, "code"))


def _federal(flow: Flow, body: dict) -> None:
    federal = _need(
        _object(body, "federal"),
        "FEDERAL_IDENTITY_REQUIRED",
        "Give federal {first_name, last_name, social_security_number}.",
    )
    flow.submit_federal(
        _text(federal, "first_name"), _text(federal, "last_name"), _text(federal, "social_security_number")
    )


def _allocation(flow: Flow, body: dict) -> None:
    allocation = _object(body, "allocation") or {"type": "full"}
    flow.choose_allocation(
        str(allocation.get("type") or "full"), allocation.get("value"), allocation.get("target_index", 0)
    )


STEPS: dict[str, Callable[[Flow, dict], None]] = {
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


def _ended(flow: Flow) -> LinkError:
    if flow.row.state == m.EXPIRED:
        return LinkError("LINK_TOKEN_EXPIRED", "This Link token has expired.", recoverable=False)
    return LinkError(
        "LINK_TOKEN_ALREADY_USED",
        f"This Link token's flow has already ended ({flow.row.state}); create a new token.",
        recoverable=False,
    )


def complete(link_token: LinkToken, body: dict[str, Any]) -> tuple[Flow, list[dict[str, Any]]]:
    """Run the flow to its end; returns the flow and the client events the SDK would have seen.

    Raises LinkError with the code Link would have shown. The caller commits either way, so what
    happened (attempts, a terminal error, erased matching data) is kept exactly as in Link.
    """
    extra = sorted(set(body) - KNOWN_FIELDS)
    if extra:
        raise ValidationFailed([FieldError(name, "is not a known field") for name in extra])
    for name in ("credentials", "mfa", "allocation", "federal"):
        _object(body, name)  # a malformed section is a request error whichever step would read it
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
            STEPS[flow.row.state](flow, body)
        except StaleStep:
            raise _ended(flow) from None
        events.extend(flow.events)
        if flow.row.job_id is not None:
            break  # the switch was submitted: an immediate job error is an outcome, not a request error
        flow.raise_if_error()
    return flow, events
