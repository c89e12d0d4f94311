"""What the stage's panel says, in words a prospect reads: each webhook as one row with its state, the job's
steps, and the backend's own API calls apart from the stage's set-up and sandbox-only calls.

Pure functions over the rows the console already keeps (inbox messages, request log entries, job
transitions); no Flask, no database. The API's own names stay beside the words, in small type, for the
developer in the room.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from console.core import jsontext

# How an outcome reads, on a job's step and on a direct_deposit_switch.added webhook.
OUTCOME_WORDS = {
    "success": "succeeded",
    "sent": "sent to the agency",
    "processing": "processing",
    "pending": "pending: the platform has not confirmed yet",
    "error": "did not go through",
    "failure": "failed",
}
GOOD_OUTCOMES = ("success", "sent")
BAD_OUTCOMES = ("error", "failure")
EVENT_WORDS = {
    "account.added": "Account connected",
    "direct_deposit_switch.added": "Direct deposit switch",
    "employment.added": "Employment details",
    "income.added": "Income details",
}
JOB_WORDS = {"direct_deposit_switch": "Direct deposit switch"}

# States of one event's deliveries to the backend's receiver.
DELIVERED, REFUSED, REDELIVERED, UNVERIFIED = "delivered", "refused", "redelivered", "unverified"
STATE_WORDS = {
    DELIVERED: "delivered, answered 200",
    REFUSED: "answered 500: will retry",
    REDELIVERED: "answered 500, then delivered on the retry",
    UNVERIFIED: "signature not verified",
}
FAILED_ANSWER = "fail"  # the inbox's behaviour when it answered 500 (console.web.webhooks.inbox.FAIL)
# The inbox's behaviour when it held its answer past the sender's timeout (console.web.webhooks.inbox.TIMEOUT): the
# sender counts that delivery as failed and retries it, so it is refused too, in its own words. It read
# "delivered, answered 200" while the stage's wait_for_event said no webhook had arrived.
TIMED_OUT_ANSWER = "timeout"
NOT_ACCEPTED = (FAILED_ANSWER, TIMED_OUT_ANSWER)
TIMED_OUT_WORDS = {
    REFUSED: "answered too late (timed out): will retry",
    REDELIVERED: "timed out, then delivered on the retry",
}


def _words(name: str) -> str:
    return name.replace("_", " ").replace(".", " ").strip().capitalize() or "Something"


def outcome_words(outcome: str | None) -> str:
    return OUTCOME_WORDS.get(outcome or "", (outcome or "").replace("_", " "))


def tone(outcome: str | None) -> str:
    """ok, bad or neutral: the colour a state is shown in."""
    if outcome in GOOD_OUTCOMES:
        return "ok"
    return "bad" if outcome in BAD_OUTCOMES else "neutral"


@dataclass
class EventRow:
    """One event the backend was sent, however many times it was delivered."""

    event_id: str
    event_type: str
    words: str  # "Direct deposit switch succeeded"
    api_name: str  # "direct_deposit_switch.added · success"
    outcome: str
    state: str
    state_words: str
    end_user_id: str  # whose event it is (the payload's end_user_id); "" when it names nobody
    at: str  # the event's moment on the workspace clock (ISO, from the payload); "" when it has none
    received_at: datetime | None  # real time of the newest delivery
    deliveries: int = 0
    verified: bool = True
    messages: list[Any] = field(default_factory=list)
    customer: str = ""  # "Customer 2": who the event is about, in words (see name_customers)

    @property
    def state_tone(self) -> str:
        return "bad" if self.state in (REFUSED, UNVERIFIED) else "ok"


def _body(message) -> dict[str, Any]:
    try:
        body = jsontext.loads(message.body or "{}")
    except (ValueError, TypeError):  # not JSON, or nested too deep (json.loads raised RecursionError)
        return {}
    # Anyone may post to the inbox: a "\\ud800" in a value would make the page unencodable (a 500).
    return jsontext.printable(body) if isinstance(body, dict) else {}


def event_rows(messages: list[Any]) -> list[EventRow]:
    """Inbox messages (newest first) as one row per event, newest first, each with its delivery state.

    A delivery refused with 500 and later accepted is one row that says so: never a red "will retry" badge
    beside an event that has in fact arrived. Conformance samples are not events and are left out.
    """
    rows: dict[str, EventRow] = {}
    order: list[str] = []
    for message in messages:
        if getattr(message, "conformance", False):
            continue
        key = message.event_id or f"message-{message.id}"
        row = rows.get(key)
        if row is None:
            body = _body(message)
            payload = body.get("payload") if isinstance(body.get("payload"), dict) else {}
            event_type = message.event_type or str(body.get("event") or "unknown event")
            outcome = str(payload.get("outcome") or "")
            words = EVENT_WORDS.get(event_type, _words(event_type))
            if outcome:
                words = f"{words} {outcome_words(outcome)}"
            row = EventRow(
                event_id=key,
                event_type=event_type,
                words=words,
                api_name=f"{event_type} · {outcome}" if outcome else event_type,
                outcome=outcome,
                end_user_id=str(payload.get("end_user_id") or ""),
                state=DELIVERED,
                state_words="",
                at=str(payload.get("timestamp") or payload.get("created_at") or ""),
                received_at=message.received_at,
            )
            rows[key] = row
            order.append(key)
        row.messages.append(message)
    result = []
    for key in order:
        row = rows[key]
        row.deliveries = len(row.messages)
        row.verified = all(m.verified for m in row.messages)
        refused = [m for m in row.messages if m.behaviour in NOT_ACCEPTED]
        accepted = [m for m in row.messages if m.behaviour not in NOT_ACCEPTED and m.verified]
        if not row.verified and not accepted:
            row.state = UNVERIFIED
        elif refused and accepted:
            row.state = REDELIVERED
        elif refused:
            row.state = REFUSED
        else:
            row.state = DELIVERED
        row.state_words = STATE_WORDS[row.state]
        if refused and all(m.behaviour == TIMED_OUT_ANSWER for m in refused):
            row.state_words = TIMED_OUT_WORDS.get(row.state, row.state_words)
        if row.state == DELIVERED and row.deliveries > 1:
            row.state_words += f" ({row.deliveries} copies: at least once)"
        result.append(row)
    return result


def name_customers(jobs: list[Any], rows: list[EventRow]) -> dict[str, str]:
    """Each end user of the run as "Customer 1", "Customer 2"... in the order they first appear (jobs oldest
    first, then events oldest first), and, when there are several, each event row named after its own: two
    identical "switch succeeded" rows say whose switch each was."""
    names: dict[str, str] = {}
    seen = [getattr(j, "end_user_id", None) for j in jobs] + [r.end_user_id for r in reversed(rows)]
    for end_user_id in seen:
        if end_user_id and end_user_id not in names:
            names[end_user_id] = f"Customer {len(names) + 1}"
    if len(names) > 1:  # one customer needs no name on every row (the API line carries the id)
        for row in rows:
            row.customer = names.get(row.end_user_id, "")
    return names


def still_refused(rows: list[EventRow]) -> bool:
    """Some event was refused and has not been delivered since."""
    return any(r.state == REFUSED for r in rows)


# --- API calls ------------------------------------------------------------------------------------------

SETUP_STEPS = ("webhook",)  # the stage's own inbox registered when its workspace is made


@dataclass(frozen=True)
class CallRow:
    words: str
    method: str
    path: str
    status: int | None
    setup: bool  # the stage's set-up or a sandbox-only call: not one a real backend makes

    @property
    def ok(self) -> bool:
        return bool(self.status) and self.status < 400


def _api_path(path: str) -> str:
    """The path after the mode's prefix and /v1: "/sandbox/v1/link_tokens" -> "/link_tokens"."""
    marker = "/v1/"
    return "/" + path.split(marker, 1)[1] if marker in path else path


def call_words(method: str, path: str) -> str:
    api = _api_path(path)
    if api.startswith("/sandbox/clock/"):
        return "Move the sandbox clock"
    if api.startswith("/sandbox/link_tokens/") and api.endswith("/complete"):
        return "Finish Link without a person (sandbox only)"
    if api.startswith("/sandbox/"):
        return "Sandbox-only call"
    if api.startswith("/link_tokens") and method == "POST":
        return "Create a Link token"
    if api.startswith("/webhooks") and method == "POST":
        return "Register the webhook receiver"
    if api.startswith("/jobs"):
        return "Read the job"
    if api.startswith("/accounts"):
        return "Read the account"
    return f"{method} {api}"


def call_rows(calls: list[Any]) -> list[CallRow]:
    result = []
    for c in calls:
        api = _api_path(c.path)
        setup = api.startswith("/sandbox/") or (c.step or "") in SETUP_STEPS
        result.append(CallRow(call_words(c.method, c.path), c.method, c.path, c.status, setup))
    return result


def split_calls(calls: list[Any]) -> tuple[list[CallRow], list[CallRow]]:
    """(the backend's own calls, the stage's set-up and sandbox-only calls), each in the given order."""
    rows = call_rows(calls)
    return [r for r in rows if not r.setup], [r for r in rows if r.setup]


# --- the job's steps ------------------------------------------------------------------------------------


def job_words(name: str) -> str:
    return JOB_WORDS.get(name, _words(name))


# The app's own status line in the phone, by the newest switch's outcome. A federal benefits switch ends "sent" (to
# the agency): its line said "Your paycheck now comes here" under a Social Security story.
PHONE_WORDS = {
    None: "Get paid up to two days early: move your direct deposit here.",
    "success": "✓ Your paycheck now comes here.",
    "sent": "✓ Sent to the agency: your benefit payments will come here.",
    "pending": "Switch in progress…",
    "processing": "Switch in progress…",
}
PHONE_FAILED = "The switch did not go through. You can try again."


def phone_words(outcome: str | None) -> str:
    return PHONE_WORDS.get(outcome or None, PHONE_FAILED)


def short_time(value: datetime | str | None) -> str:
    """A moment on the stage, short enough for the back of the room: "Mon 30 Nov 09:14:05" (UTC)."""
    if not value:
        return ""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime("%a %d %b %H:%M:%S")
