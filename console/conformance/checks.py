"""The conformance suite: what each check sends, and how it judges the answer.

Every request is a sample event built and shaped by the code real deliveries use
(`events.queries.sample_payload`, `webhooks.shaping`), signed like a real delivery
(`delivery.signed_headers`) and marked with `x-service-conformance: true`. The ids inside are made up
and refer to nothing. Checks run at the same time, each with one deadline (the delivery timeout, 15 s)
for all its requests; `services.run` enforces it.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from console.conformance.sender import CONFORMANCE_HEADER, TIMEOUT, Received, Request, Target
from console.events.models import EVENT_TYPES
from console.events.queries import sample_payload
from console.versions import PRIME_MIN_VERSION
from console.webhooks import shaping
from console.webhooks.delivery import signed_headers

SLOW_MS = 1000  # above this an accepted answer carries a warning
STALE_SECONDS = 600  # twice the 5-minute tolerance: stale whatever the receiver's clock skew
TOLERANCE_MINUTES = 5
ALTERED_END_USER = "someone-else"


@dataclass(frozen=True)
class Plan:
    """Everything the suite needs, read before any request goes out (no database while sending)."""

    target: Target
    secret: str = field(repr=False)
    api_key_id: uuid.UUID
    version: str
    enabled_events: tuple[str, ...]
    at: datetime  # the workspace clock: times inside sample payloads
    timeout: float


@dataclass
class Exchange:
    sent: Request
    received: Received


@dataclass(frozen=True)
class Verdict:
    passed: bool
    detail: str
    warning: str | None = None


@dataclass
class Outcome:
    """One check's verdict and the requests it made."""

    name: str
    title: str
    passed: bool
    detail: str
    warning: str | None = None
    exchanges: list[Exchange] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        last = self.exchanges[-1] if self.exchanges else None
        return {
            "name": self.name,
            "title": self.title,
            "passed": self.passed,
            "detail": self.detail,
            "warning": self.warning,
            "sent": last.sent.as_dict() if last else None,
            "received": last.received.as_dict() if last else None,
            "exchanges": [
                {"sent": e.sent.as_dict(), "received": e.received.as_dict()} for e in self.exchanges
            ],
        }


Send = Callable[[Request, float], Received]  # (request, timeout) -> answer


@dataclass(frozen=True)
class Check:
    name: str
    title: str
    run: Callable[[Run], Verdict]


class Run:
    """One check's context: the plan, the sender, and the check's deadline."""

    def __init__(self, plan: Plan, send: Send) -> None:
        self.plan = plan
        self._send = send
        self.started = time.monotonic()
        self.deadline = self.started + plan.timeout
        self.exchanges: list[Exchange] = []
        self.in_flight: tuple[Request, float] | None = None  # (request, when it went out), until answered

    def send(self, request: Request) -> Received:
        now = time.monotonic()
        self.in_flight = (request, now)
        received = self._send(request, max(self.deadline - now, 0.001))
        self.exchanges.append(Exchange(request, received))
        self.in_flight = None
        return received

    def given_up(self) -> list[Exchange]:
        """The exchanges so far, the unanswered request last, when the run stops waiting for this check."""
        exchanges = list(self.exchanges)
        in_flight = self.in_flight
        if in_flight is not None:
            request, sent_at = in_flight
            error = f"timeout: no complete answer within {self.plan.timeout:g} s"
            waited = int((time.monotonic() - sent_at) * 1000)
            exchanges.append(Exchange(request, Received(None, waited, error=error, reason=TIMEOUT)))
        return exchanges


# Building requests ----------------------------------------------------------------------------


def event_document(plan: Plan, event_type: str, event_id: str, *, without_action: bool = False):
    """(`{"event", "event_id", "payload"}` as sent to this webhook's version, shaping's version warning)."""
    payload = sample_payload(event_type, plan.at)
    if without_action:
        # A switch on a partner platform whose partner gave no action (2023-11-22 allows it).
        del payload["params"]["action"]
    shaped = shaping.shape(event_type, payload, plan.version)
    return {"event": event_type, "event_id": event_id, "payload": shaped.payload}, shaped.warning


def body_of(document: dict[str, Any]) -> bytes:
    """The exact bytes a real delivery sends for this document."""
    return shaping.body_bytes(document["event"], document["event_id"], document["payload"])


def signed(plan: Plan, body: bytes, *, secret: str | None = None, timestamp: int | None = None) -> Request:
    """A request carrying `body`, signed like a real delivery (with `secret`, at `timestamp`)."""
    stamp = int(time.time()) if timestamp is None else timestamp
    headers = signed_headers(secret or plan.secret, stamp, body, plan.target.webhook_id, plan.version)
    headers[CONFORMANCE_HEADER] = "true"
    return Request(plan.target.url, headers, body)


def a(word: str) -> str:
    """`word` with its indefinite article ("an account.added", "a direct_deposit_switch.added")."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def new_event_id() -> str:
    return str(uuid.uuid4())


# Judging answers ------------------------------------------------------------------------------


def _status(received: Received) -> str:
    return (
        f"answered {received.status}" if received.status is not None else f"got no answer ({received.error})"
    )


def acceptance_warning(received: Received) -> str | None:
    """Why an accepted answer is not quite right: slow, or a 2xx other than 200."""
    warnings = []
    if received.latency_ms > SLOW_MS:
        warnings.append(
            f"answered in {received.latency_ms:,} ms, above 1 s: deliveries time out at 15 s; answer first "
            "and do the work afterwards (e.g. on a queue)"
        )
    if received.status != 200:
        warnings.append(
            f"answered {received.status}, not 200 OK: delivered, but only a 200 OK counts against pausing"
        )
    return "; ".join(warnings) or None


def not_accepted(received: Received) -> str:
    """What a refusal of a good delivery means for real deliveries, and where to look."""
    if received.status is None:
        if received.reason == TIMEOUT:
            return (
                f"{_status(received)}: real deliveries would be retried, then fail. Answer within 15 s; do slow "
                "work after answering."
            )
        return f"{_status(received)}: real deliveries would be retried, then fail."
    if 300 <= received.status < 400:
        return f"{_status(received)}: redirects are not followed; register the final URL."
    if received.status >= 500:
        return f"{_status(received)}: real deliveries would be retried up to 6 times, then fail."
    return (
        f"{_status(received)}: a real delivery would be recorded as failed and not retried (4xx means "
        "'refused for good')."
    )


def _refusal(run: Run, request: Request, what: str, why: str) -> Verdict:
    """Pass when the endpoint refuses `request` with a 4xx."""
    received = run.send(request)
    if received.refused:
        return Verdict(True, f"Refused with {received.status}: {what} is turned away.")
    if received.accepted:
        detail = f"Accepted ({received.status}) {what}. {why}"
    elif received.status is not None and received.status >= 500:
        detail = (
            f"Answered {received.status} to {what}: refuse it with a 4xx instead. A 5xx means 'try again', "
            "so real senders retry it, and a bad signature will not get better by retrying."
        )
    elif received.status is not None:
        detail = f"Answered {received.status} to {what}: refuse it with a 4xx (redirects are not followed)."
    else:
        detail = f"{_status(received).capitalize()} to {what}: the endpoint must answer, with a 4xx."
    return Verdict(False, detail)


# The checks ----------------------------------------------------------------------------------


def signed_event(run: Run) -> Verdict:
    plan = run.plan
    event_type = plan.enabled_events[0]
    document, _warning = event_document(plan, event_type, new_event_id())
    received = run.send(signed(plan, body_of(document)))
    if received.accepted:
        detail = f"Accepted a correctly signed {event_type} event: {received.status} in {received.latency_ms:,} ms."
        return Verdict(True, detail, acceptance_warning(received))
    detail = f"A correctly signed {event_type} event: {not_accepted(received)}"
    if received.refused:
        detail += (
            f" Verify with the API secret of the key that owns this webhook (api_key_id {plan.api_key_id}), "
            "over the raw body bytes as received (not re-serialized JSON), and check your server's clock."
        )
    return Verdict(False, detail)


def forged_signature(run: Run) -> Verdict:
    plan = run.plan
    document, _warning = event_document(plan, plan.enabled_events[0], new_event_id())
    wrong = "sk_sandbox_not_your_secret_" + secrets.token_hex(16)  # made up here, thrown away after
    return _refusal(
        run,
        signed(plan, body_of(document), secret=wrong),
        "an event signed with a secret that is not yours",
        "Anyone who learns your URL can make you act on events they invent. Compute HMAC-SHA256 over "
        "'v2:' + x-timestamp + ':' + the raw body with your API secret, compare it in constant time with "
        "x-service-signature, and answer 4xx when it does not match (console.webhooks.verify does it).",
    )


def altered_body(run: Run) -> Verdict:
    plan = run.plan
    document, _warning = event_document(plan, plan.enabled_events[0], new_event_id())
    request = signed(plan, body_of(document))
    original = document["payload"].get("end_user_id")
    altered = {**document, "payload": {**document["payload"], "end_user_id": ALTERED_END_USER}}
    # The signature of the original body, on different bytes: what a tampering proxy would send.
    tampered = Request(request.url, request.headers, body_of(altered))
    return _refusal(
        run,
        tampered,
        f"a body changed after signing (payload.end_user_id {original!r} became {ALTERED_END_USER!r})",
        "Your receiver does not check the signature against the body it got. Verify over the exact raw "
        "bytes received, before parsing them.",
    )


def stale_timestamp(run: Run) -> Verdict:
    plan = run.plan
    document, _warning = event_document(plan, plan.enabled_events[0], new_event_id())
    stamp = int(time.time()) - STALE_SECONDS
    return _refusal(
        run,
        signed(plan, body_of(document), timestamp=stamp),
        f"an event correctly signed but stamped {STALE_SECONDS // 60} minutes ago",
        "Anyone who recorded one delivery can replay it to you later. Refuse an x-timestamp more than "
        f"{TOLERANCE_MINUTES} minutes from your clock (verify(..., tolerance=300) does).",
    )


def duplicate_event(run: Run) -> Verdict:
    plan = run.plan
    event_id = new_event_id()
    document, _warning = event_document(plan, plan.enabled_events[0], event_id)
    body = body_of(document)
    first = run.send(signed(plan, body))
    if not first.accepted:
        detail = (
            f"The first delivery of event_id {event_id}: {not_accepted(first)} (see the signed event check)."
        )
        return Verdict(False, detail)
    # Sent again as a retry or a resend would be: the same bytes, a new timestamp and signature.
    second = run.send(signed(plan, body))
    if second.accepted:
        detail = (
            f"Both deliveries of event_id {event_id} were accepted ({first.status}, then {second.status}). "
            "Deliveries are at least once: make sure you act on an event_id only once."
        )
        return Verdict(True, detail, acceptance_warning(first) or acceptance_warning(second))
    detail = (
        f"The first delivery of event_id {event_id} was accepted, the second {_status(second)}. Deliveries are "
        "at least once (a retry after a timeout, a resend, a worker restart): answer a duplicate 200 and do "
        "nothing more, e.g. keep handled event_ids under a unique constraint and treat a conflict as done."
    )
    return Verdict(False, detail)


# An event check's advice when only that event was refused; when the correctly signed event was refused too,
# the run puts SEE_SIGNED_EVENT in its place (console.conformance.services), since the event is not the cause.
ACCEPT_EVERY_EVENT = (
    "Accept every event you subscribed to, including fields you do not use; ignore what you do not need rather "
    "than refusing it."
)
SEE_SIGNED_EVENT = (
    "The correctly signed event was refused the same way, so the cause is likely signature or timestamp "
    "verification, not this event (see the signed event check)."
)


def event_type_check(event_type: str, without_action: bool = False) -> Check:
    name = f"event:{event_type}" + (":without_action" if without_action else "")
    shape = " (partner platform: params.action absent)" if without_action else ""
    title = f"{a(event_type).capitalize()} event{shape} is accepted"

    def check(run: Run) -> Verdict:
        plan = run.plan
        document, version_warning = event_document(
            plan, event_type, new_event_id(), without_action=without_action
        )
        received = run.send(signed(plan, body_of(document)))
        shape_text = (
            "params.action absent, and with it allocation.type and allocation.value, as on a partner platform "
            "whose partner gave none"
            if without_action
            else f"as version {plan.version} delivers it"
        )
        if received.accepted:
            detail = f"Accepted {a(event_type)} event ({shape_text}): {received.status} in {received.latency_ms:,} ms."
            warning = "; ".join(w for w in (version_warning, acceptance_warning(received)) if w) or None
            return Verdict(True, detail, warning)
        detail = f"{a(event_type).capitalize()} event ({shape_text}): {not_accepted(received)} {ACCEPT_EVERY_EVENT}"
        return Verdict(False, detail, version_warning)

    return Check(name, title, check)


def unsubscribed_not_sent(plan: Plan) -> Outcome:
    """Ours, shown for teaching: passes by construction, and nothing is sent."""
    others = [t for t in EVENT_TYPES if t not in plan.enabled_events]
    subscribed = ", ".join(plan.enabled_events)
    if others:
        detail = (
            f"This webhook subscribes to {subscribed}, so {', '.join(others)} events are never sent to it: "
            "deliveries are created only for webhooks whose enabled_events name the event's type (and this "
            "check sent none either). Nothing to do on your side; a check of ours, shown so you know you "
            "will not receive the other types unless you add them to enabled_events."
        )
    else:
        detail = (
            f"This webhook subscribes to every event type ({subscribed}), so there is none left out. Deliveries "
            "are created only for webhooks whose enabled_events name the event's type: a webhook never "
            "receives a type it did not subscribe to. A check of ours, shown for completeness."
        )
    return Outcome(
        "unsubscribed_event_not_sent",
        "An event type the webhook did not subscribe to is never sent",
        True,
        detail,
    )


def suite(plan: Plan) -> list[Check]:
    """Every check that sends, in report order."""
    checks = [
        Check("signed_event", "A correctly signed event is accepted within 15 s", signed_event),
        Check("forged_signature", "A forged signature is refused with a 4xx", forged_signature),
        Check("altered_body", "A body altered after signing is refused with a 4xx", altered_body),
        Check(
            "stale_timestamp",
            f"A timestamp older than {TOLERANCE_MINUTES} minutes is refused with a 4xx",
            stale_timestamp,
        ),
        Check("duplicate_event", "The same event_id delivered twice is accepted both times", duplicate_event),
    ]
    for event_type in plan.enabled_events:
        checks.append(event_type_check(event_type))
        if event_type == shaping.SWITCH_EVENT:
            # The two shapes a switch takes; the second is only valid from PRIME_MIN_VERSION on, and a
            # webhook of an older version still receives it, flagged (docs/webhooks.md, Versions).
            checks.append(event_type_check(event_type, without_action=True))
    return checks


def sample_note(plan: Plan) -> str:
    return (
        "Sample events: every id in them (job, account, Link token, platform, event_id) is made up and refers to "
        f"nothing in your workspace; times follow the workspace clock. Shaped for version {plan.version}"
        + (
            f"; switches are also sent without params.action, a shape only {PRIME_MIN_VERSION} allows."
            if plan.version < PRIME_MIN_VERSION
            else "."
        )
    )
