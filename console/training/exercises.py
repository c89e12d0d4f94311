"""The training curriculum: each exercise checked from what really happened in a workspace.

A check reads database facts only, never a click in the console: a Link token the workspace's key
created from outside the console (`LinkToken.created_by_console`), a Link session whose parent page
was another origin (`LinkSession.embedding_origin`), the webhooks, the finished conformance runs, a jobs
search by a backend (`LinkToken.outside_lookup_at`) and the jobs' transitions. Each answers a
`Result`: done, and a reason a trainee (or their trainer) can act on.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from flask import current_app
from sqlalchemy import select

from console.conformance.models import ACTIVE as RUN_ACTIVE
from console.conformance.models import DONE, ConformanceRun
from console.conformance.sender import TIMEOUT
from console.extensions import db
from console.jobs.models import Job, JobTransition
from console.jobs.plans import PENDING, SENT, SUCCESS
from console.link.models import OPAQUE_ORIGIN, LinkSession
from console.link_tokens.models import LinkToken
from console.requestlog.models import RequestLogEntry
from console.training.models import own_call
from console.webhooks import own_inbox
from console.webhooks.models import ACTIVE, Webhook
from console.webhooks.urls import RELAY_URL
from console.workspaces.models import Workspace

WEBHOOK_VERSION = "2023-11-22"


@dataclass(frozen=True)
class Result:
    done: bool
    reason: str
    # A few words for the grid's cell when the trainee tried and it went wrong ("HTTP 500", "timeout",
    # "forged ok"): on a projector the trainer reads who is stuck on what without hovering 20 cells.
    # Empty when there is nothing to say beyond "not done yet".
    label: str = ""


@dataclass(frozen=True)
class Exercise:
    key: str
    title: str
    short: str  # the grid's column header: a projector shows six of them side by side
    task: str
    hint: str
    solution: str  # a reference solution (Python, Flask)
    check: Callable[[Workspace], Result]


def own_webhooks(workspace: Workspace) -> list[Webhook]:
    """The workspace's live webhooks that are not the console's built-in inbox."""
    secret = current_app.config["SECRET_KEY"]
    hooks = db.session.scalars(
        select(Webhook)
        .where(Webhook.workspace_id == workspace.id, Webhook.deleted_at.is_(None))
        .order_by(Webhook.created_at.desc(), Webhook.id)
    ).all()
    return [h for h in hooks if not own_inbox.is_inbox_of(secret, workspace.id, h.url)]


def endpoint_name(hook: Webhook) -> str:
    """How a reason names a trainee's endpoint, mid-sentence: "your endpoint <its URL>", or for a relayed
    webhook (whose URL is the placeholder relay://console-listen, which the trainee never typed) the listener
    that forwards to it. One phrase for both, so no sentence reads "Your endpoint your endpoint behind …"."""
    return (
        "your endpoint behind the listener (pcc.py listen)"
        if hook.url == RELAY_URL
        else f"your endpoint {hook.url}"
    )


def _starting(phrase: str) -> str:
    """`endpoint_name` at the start of a sentence."""
    return phrase[:1].upper() + phrase[1:]


def check_link_token(workspace: Workspace) -> Result:
    token = db.session.scalars(
        select(LinkToken)
        .where(LinkToken.workspace_id == workspace.id, LinkToken.created_by_console.is_(False))
        .order_by(LinkToken.created_at)
        .limit(1)
    ).first()
    if token is not None:
        return Result(True, f"Your backend created Link token {token.id}.")
    by_console = db.session.scalar(
        select(LinkToken.id).where(LinkToken.workspace_id == workspace.id).limit(1)
    )
    if by_console is not None:
        return Result(
            False,
            "Only the console has created Link tokens: send POST /v1/link_tokens from your code.",
            "console only",
        )
    refused = _refused_link_token_request(workspace)
    if refused is not None:
        return refused
    return Result(
        False, "No Link token yet: send POST /v1/link_tokens from your backend with your sandbox key."
    )


def _refused_link_token_request(workspace: Workspace) -> Result | None:
    """The trainee's newest own POST /v1/link_tokens, when the API refused it: what it said, and on the grid
    "HTTP 400". A trainee whose backend sent a wrong body or header read "No Link token yet: send POST
    /v1/link_tokens …", alike to one who never tried; the trainer's grid showed the same quiet dot.

    Found in the own-calls partial index (`models.own_call`), which covers these columns, so a log full of a
    listener's polls is not walked; the answer's body is read only for a refusal, by its row's key."""
    asked = (
        RequestLogEntry.workspace_id == workspace.id,
        RequestLogEntry.method == "POST",
        RequestLogEntry.path.like("%/v1/link_tokens"),
    )
    latest = db.session.execute(
        select(RequestLogEntry.created_at, RequestLogEntry.status)
        .where(*asked, own_call())
        .order_by(RequestLogEntry.created_at.desc())
        .limit(1)
    ).first()
    if latest is None or latest.status is None or latest.status < 400:
        return None
    body = db.session.scalar(
        select(RequestLogEntry.response_body)
        .where(*asked, RequestLogEntry.created_at == latest.created_at)
        .limit(1)
    )
    said = _api_error(body or "")
    return Result(
        False,
        f"The API refused your backend's last POST /v1/link_tokens: {latest.status}"
        + (f" {said}" if said else "")
        + ". Fix what it names and send it again.",
        f"HTTP {latest.status}",
    )


def _api_error(body: str) -> str:
    """An API error body (docs/api.md) in a few words: its code, then each refused field or else its message,
    e.g. "INVALID_FIELDS (allocation: is required)"; "" when the body is not one."""
    try:
        error = json.loads(body or "").get("error") or {}
    except (ValueError, AttributeError):
        return ""
    if not isinstance(error, dict):
        return ""
    fields = [
        f"{f.get('name')}: {f.get('message')}" for f in error.get("fields") or [] if isinstance(f, dict)
    ]
    detail = "; ".join(fields) if fields else str(error.get("message") or "")
    code = str(error.get("code") or "")
    return f"{code} ({detail})" if code and detail else code or detail


def check_link_sdk(workspace: Workspace) -> Result:
    origin = db.session.scalar(
        select(LinkSession.embedding_origin)
        .where(
            LinkSession.workspace_id == workspace.id,
            LinkSession.embedding_origin.is_not(None),
            LinkSession.embedding_origin != OPAQUE_ORIGIN,
        )
        .order_by(LinkSession.started_at)
        .limit(1)
    )
    if origin:
        return Result(True, f"Link was opened from your page at {origin}.")
    from_file = db.session.scalar(
        select(LinkSession.id)
        .where(LinkSession.workspace_id == workspace.id, LinkSession.embedding_origin == OPAQUE_ORIGIN)
        .limit(1)
    )
    if from_file is not None:
        # index.html double-clicked: the page has no origin, the browser refuses Link's frame (a grey box),
        # and "not inside a page of yours" would have been untrue.
        return Result(
            False,
            "Link was opened from your page, but that page was opened as a file (file://…), which browsers give "
            "no origin, so Link could not show inside it. Serve the page instead: python3 -m http.server 8080 "
            "in its folder, then open http://localhost:8080.",
            "file page",
        )
    opened = db.session.scalar(
        select(LinkSession.id).where(LinkSession.workspace_id == workspace.id).limit(1)
    )
    if opened is not None:
        # No parent origin: the console's own Link, or Link's URL opened on its own (no page around it).
        return Result(
            False,
            "Link was opened, but not inside a page of yours (from the console, or its URL opened directly): "
            "open it from your own page with link.js.",
            "no page",
        )
    return Result(False, "Link has not been opened yet: open it from your own page with the SDK (link.js).")


def check_own_endpoint(workspace: Workspace) -> Result:
    hooks = own_webhooks(workspace)
    good = [h for h in hooks if h.version == WEBHOOK_VERSION and h.status == ACTIVE]
    if good:
        return Result(
            True, f"{_starting(endpoint_name(good[0]))} is registered with version {WEBHOOK_VERSION}."
        )
    if not hooks:
        return Result(
            False, "Only the console's inbox is registered: POST /v1/webhooks with your endpoint's URL."
        )
    hook = hooks[0]
    if hook.version != WEBHOOK_VERSION:
        return Result(
            False,
            f"{_starting(endpoint_name(hook))} uses version {hook.version}: register it with {WEBHOOK_VERSION}.",
            "old version",
        )
    return Result(
        False,
        f"{_starting(endpoint_name(hook))} is {hook.status}: make it active (PUT status=active).",
        str(hook.status),
    )


def check_conformance(workspace: Workspace) -> Result:
    """Ticks on a passed report among the finished conformance runs of the trainee's own endpoints."""
    hooks = {h.id: h for h in own_webhooks(workspace)}
    if not hooks:
        return Result(False, "Register your own endpoint first (exercise 3).")
    mine = (ConformanceRun.workspace_id == workspace.id, ConformanceRun.webhook_id.in_(list(hooks)))
    reports = db.session.scalars(
        select(ConformanceRun)
        .where(*mine, ConformanceRun.status == DONE, ConformanceRun.passed.is_not(None))
        .order_by(ConformanceRun.finished_at.desc())
    ).all()
    passed = next((r for r in reports if r.passed), None)
    if passed is not None:
        return Result(
            True, f"{_starting(endpoint_name(hooks[passed.webhook_id]))} passed the conformance check."
        )
    latest = (
        f"The latest check of {endpoint_name(hooks[reports[0].webhook_id])} failed: "
        f"{_why_failed(reports[0].report)}."
        if reports
        else ""
    )
    active = db.session.scalars(select(ConformanceRun.id).where(*mine, ConformanceRun.status.in_(RUN_ACTIVE)))
    if active.first() is not None:
        # A trainee who fixed their endpoint and runs the check again: the grid says so while it runs
        # (up to ~16 s), not the failure it may be about to replace.
        before = f" Before it: {latest[0].lower()}{latest[1:]}" if latest else ""
        return Result(
            False, f"The conformance check is running: its report counts once it is done.{before}", "running…"
        )
    if not reports:
        return Result(False, "No conformance check yet: run it on your endpoint (Webhooks page or the API).")
    return Result(False, latest, _failure_label(reports[0].report))


TIMEOUT_WORDS = re.compile(r"^timeout: no (?:complete answer|response) within ([0-9.]+) s$")


def _answer(received: dict) -> str:
    """What one request of a conformance check got back, in words. Timeouts read alike: each check's request
    waits out what is left of one shared deadline ("within 14.9847 s"), so the same slow endpoint gave as
    many different words as checks."""
    if received.get("status") is None:
        error = str(received.get("error") or "no answer")
        timeout = TIMEOUT_WORDS.match(error)
        if timeout:
            return f"timeout: no answer within {math.ceil(float(timeout.group(1)))} s"
        return error
    return f"answered {received['status']}"


# A 4xx that says the URL has no receiver, not that the signature was refused: a webhook registered with the
# wrong path (/webhook for /hooks) passes the refusal checks with its 404s, and was told to check its key.
NO_RECEIVER = {404: "not found", 405: "method not allowed"}


def _signed_refusal(checks: list[dict]) -> int | None:
    """The 4xx the endpoint turned the correctly signed event away with, if it did: it refuses every real
    delivery, and the failing checks' names ("signed_event, duplicate_event, event:…") hide why."""
    signed = next((c for c in checks if c.get("name") == "signed_event"), None)
    if signed is None or signed.get("passed"):
        return None
    status = (signed.get("received") or {}).get("status")
    return status if isinstance(status, int) and 400 <= status < 500 else None


def _refuses_signed(checks: list[dict]) -> str | None:
    """`_signed_refusal` in a sentence: the URL when the answer says nothing is there, else the key."""
    status = _signed_refusal(checks)
    if status is None:
        return None
    if status in NO_RECEIVER:
        return (
            f"it answered {status} ({NO_RECEIVER[status]}) to a correctly signed event: no route of your server "
            "takes a POST at that URL, so real deliveries go nowhere too: register the path and port your "
            "receiver serves (the snippets use /hooks on port 8000)"
        )
    return (
        f"it answered {status} to a correctly signed event, so it refuses real deliveries too: verify with "
        "your own sandbox key (the one on your training page) over the raw body"
    )


def _answers_if_none_passed(checks: list[dict]) -> set[str] | None:
    """What the failed checks' requests got back, in words (`_answer`), when no check that sent a request
    passed (the endpoint is down, or answers everything alike); None when one did. `_why_failed` says it in
    a sentence; `_failure_label` reads the same checks as data (`_got_if_none_passed`)."""
    if any(c.get("passed") and c.get("exchanges") for c in checks):
        return None
    return {
        _answer(e["received"])
        for c in checks
        if not c.get("passed")
        for e in c.get("exchanges") or []
        if e.get("received")
    }


# What answering every check alike most likely means, where a status alone does not say it to a trainee.
EVERY_CHECK_CAUSES = {
    # `python3 -m http.server` (exercise 2's page) answers any POST with 501: it is on the receiver's port.
    "answered 501": (
        ": 501 is how a static file server such as python3 -m http.server answers a POST, so that port serves "
        "files, not your receiver: stop it or move it to another port (the page's snippet uses 8080), then "
        "start your receiver there"
    ),
}


def _every_check_cause(answer: str) -> str:
    """What answering every check `answer` ("answered 308") most likely means, after a colon; "" if nothing."""
    if answer in EVERY_CHECK_CAUSES:
        return EVERY_CHECK_CAUSES[answer]
    status = answer.removeprefix("answered ")
    if len(status) == 3 and status.startswith("3"):
        # Flask's route "/hooks/" answers a POST to /hooks with 308; deliveries never follow a redirect.
        return (
            f": {status} is a redirect, and deliveries do not follow redirects: register the URL your receiver "
            "answers at itself (a route declared with a trailing slash, /hooks/, redirects /hooks)"
        )
    return ""


def _why_failed(report: dict | None) -> str:
    """The cause of a failed report: the failing checks' names when some check passed, else what came back.

    An endpoint that is down or answers 500 to everything fails every check; listing eight check names would
    hide the one thing to fix ("could not connect to the host"). Checks that send nothing (ours, passing by
    construction) say nothing about the endpoint.
    """
    checks = (report or {}).get("checks", [])
    failed = [c for c in checks if not c.get("passed")]
    answers = _answers_if_none_passed(checks)
    if answers is not None:
        if len(answers) == 1:
            (answer,) = answers
            if answer.startswith("answered "):
                return f"it {answer} to every check{_every_check_cause(answer)}"
            return f"no request got an answer ({answer})"
        if answers:
            return f"no check passed ({'; '.join(sorted(answers))})"
    refuses = _refuses_signed(checks)
    if refuses is not None:
        return refuses
    # What must hold, in the check's own words, then its name (as the report and the console show it): the
    # names alone ("forged_signature, altered_body") left a trainee to guess what their receiver did wrong.
    said = [_requirement(c) for c in failed]
    return ("these must hold and did not: " + "; ".join(said)) if said else "see the report"


def _requirement(check: dict) -> str:
    """What a failed check required, then its name; and what the endpoint did when it crashed or did not
    answer ("…is accepted (event:direct_deposit_switch.added: it answered 500)"): "is accepted" alone hid
    that the receiver fell over on that event type. A 2xx or 4xx is what the requirement already says."""
    name, title = str(check.get("name", "?")), str(check.get("title") or "")
    received = check.get("received") or {}
    status = received.get("status")
    if received and (status is None or status >= 500):
        name = f"{name}: it {_answer(received)}"
    return f"{title[:1].lower()}{title[1:]} ({name})" if title else name


def _crashed_on(checks: list[dict]) -> int | None:
    """The one 5xx every failed check that got an answer got, if so: the grid's "HTTP 500" for a receiver
    that verifies and deduplicates but falls over on some events (it said only "failing")."""
    statuses = {
        (c.get("received") or {}).get("status") for c in checks if not c.get("passed") and c.get("received")
    }
    if len(statuses) == 1:
        (status,) = statuses
        if isinstance(status, int) and status >= 500:
            return status
    return None


# The grid's word for a failed check, by what the endpoint did wrong (first that applies).
_CHECK_LABELS = (
    (("forged_signature", "altered_body"), "forged ok"),
    (("stale_timestamp",), "stale ok"),
    (("duplicate_event",), "duplicates"),
)


def _failure_label(report: dict | None) -> str:
    """`_why_failed` in a word or two, for a grid cell: what a trainer walks over to fix.

    Read from the report's data (each answer's `status`, else its `reason` code), never from its words: the
    label said "down" for a timeout whose error was worded otherwise (a listener's, the inbox's)."""
    checks = (report or {}).get("checks", [])
    failed = {str(c.get("name")) for c in checks if not c.get("passed")}
    got = _got_if_none_passed(checks)
    if got is not None:
        if len(got) == 1:
            ((status, reason),) = got
            if status is not None:
                return f"HTTP {status}"
            # A report kept before reasons were recorded has none: its endpoint did not answer, "down".
            return "timeout" if reason == TIMEOUT else "down"
        if got:
            return "no answer" if all(status is None for status, _ in got) else "failing"
    refused = _signed_refusal(checks)
    if refused is not None:
        return "wrong URL?" if refused in NO_RECEIVER else "wrong key?"
    for names, label in _CHECK_LABELS:
        if failed.intersection(names):
            return label
    crashed = _crashed_on(checks)
    if crashed is not None:
        return f"HTTP {crashed}"
    return "failing" if failed else ""


def _got_if_none_passed(checks: list[dict]) -> set[tuple[int | None, str | None]] | None:
    """What the failed checks' requests got, as data: (HTTP status, None) or (None, reason code); None when
    a check that sent a request passed (`_answers_if_none_passed` says the same in words)."""
    if any(c.get("passed") and c.get("exchanges") for c in checks):
        return None
    return {
        (
            e["received"].get("status"),
            None if e["received"].get("status") is not None else e["received"].get("reason"),
        )
        for c in checks
        if not c.get("passed")
        for e in c.get("exchanges") or []
        if e.get("received")
    }


def check_missed_webhook(workspace: Workspace) -> Result:
    held = workspace.held_link_token_id
    if held is None:
        return Result(
            False,
            "Not started: press “Miss a webhook” on your training page: it runs a switch no endpoint of yours hears of.",
        )
    if workspace.held_link_token_found_at is not None:
        return Result(True, f"Your backend looked up the jobs of Link token {held}.")
    return Result(
        False,
        f"The job of Link token {held} was held back from your endpoints: find it with "
        f"GET /v1/jobs?link_token_id={held} from your backend.",
        "to find",
    )


def check_switch_outcomes(workspace: Workspace) -> Result:
    resolved = db.session.scalar(
        select(JobTransition.id)
        .join(Job, Job.id == JobTransition.job_id)
        .where(
            Job.workspace_id == workspace.id,
            JobTransition.from_outcome == PENDING,
            JobTransition.to_outcome == SUCCESS,
        )
        .limit(1)
    )
    sent = db.session.scalar(
        select(Job.id).where(Job.workspace_id == workspace.id, Job.outcome == SENT).limit(1)
    )
    missing = []
    if resolved is None:
        missing.append(
            "no pending switch has reached success yet (user_pending_success, then move the clock a minute)"
        )
    if sent is None:
        missing.append("no federal switch is sent yet (SSN 900000001, then move the clock a business day)")
    if not missing:
        return Result(True, "A pending switch succeeded and a federal switch was sent.")
    return Result(False, "; ".join(missing).capitalize() + ".")


SOLUTIONS = Path(__file__).resolve().parent / "solutions"


ROOT_PLACEHOLDER = "{ROOT}"


def _solution(key: str) -> str:
    """The reference solution shipped beside this module (solutions/<key>.py.txt); `{ROOT}` stands for the
    class's root URL (see `solution`)."""
    return (SOLUTIONS / f"{key}.py.txt").read_text()


def solution(exercise: Exercise, root: str) -> str:
    """The exercise's reference solution with this server's root (console.training.room) filled in."""
    return exercise.solution.replace(ROOT_PLACEHOLDER, root)


CURRICULUM: tuple[Exercise, ...] = (
    Exercise(
        "link_token",
        "Create a Link token from your own backend",
        "Link token",
        "Your server (not the console) calls POST /v1/link_tokens with your sandbox key.",
        "Your sandbox key is on the API keys page (Reveal), and already in the snippets below. Send org_name, "
        "end_user_id, required_jobs and an allocation target; a request from curl or your own code counts, the "
        "console's own buttons do not. The answer's id finds the jobs later, its token opens Link.",
        _solution("link_token"),
        check_link_token,
    ),
    Exercise(
        "link_sdk",
        "Open Link from your own page with the SDK",
        "Link from your page",
        "A page served by your app loads link.js and opens Link with a token your backend created.",
        "Serve the page from your own origin (e.g. http://localhost:8080), not from the console: load link.js "
        "from this server and call Link.open with the token (not the id) of a Link token you created.",
        _solution("link_sdk"),
        check_link_sdk,
    ),
    Exercise(
        "own_endpoint",
        "Register your own endpoint with version 2023-11-22",
        "Your endpoint",
        "POST /v1/webhooks with your endpoint's URL, status active, the events you handle and version 2023-11-22.",
        "This server usually cannot reach your laptop. Download the listener from it (pcc.py: one file, "
        "Python 3.9+, nothing to install) and run `python3 pcc.py listen --api <server> --key <your key> "
        "--forward-to http://localhost:8000/hooks` (filled in below): it registers a relayed webhook with "
        "version 2023-11-22 for you and forwards each delivery, signed, to your endpoint. Keep it running.",
        _solution("own_endpoint"),
        check_own_endpoint,
    ),
    Exercise(
        "conformance",
        "Pass the conformance check",
        "Conformance",
        "Your endpoint verifies signatures and timestamps, refuses forgeries with a 4xx and handles duplicates.",
        "Verify the signature over the raw body (pcc.py's verify, or the Node receiver below), reject "
        "timestamps more than 5 minutes off with a 4xx, answer 2xx to an event_id already seen. Then run the "
        "check with the listener still running.",
        _solution("conformance"),
        check_conformance,
    ),
    Exercise(
        "missed_webhook",
        "Recover a missed webhook",
        "Missed webhook",
        "The console runs a switch whose webhooks your endpoint never gets; your backend finds the job anyway.",
        "You know the Link token you handed out: GET /v1/jobs?link_token_id=… lists its jobs.",
        _solution("missed_webhook"),
        check_missed_webhook,
    ),
    Exercise(
        "switch_outcomes",
        "Follow a pending switch and a federal switch to their end",
        "Pending & federal",
        "A switch that is pending ends in success after the retry; a federal switch goes processing → sent.",
        "Run `python3 pcc.py trigger pending_then_success` and `python3 pcc.py trigger federal_sent` (or log in "
        "to Link as user_pending_success, and SSN 900000001 for the federal switch), then move your workspace "
        "clock: 90 seconds for the retry, one business day for the federal review.",
        _solution("switch_outcomes"),
        check_switch_outcomes,
    ),
)

BY_KEY = {exercise.key: exercise for exercise in CURRICULUM}
KEYS = tuple(BY_KEY)


def progress(workspace: Workspace, keys: list[str] | tuple[str, ...] = KEYS) -> list[tuple[Exercise, Result]]:
    """Each chosen exercise with its result, in curriculum order."""
    return [(e, e.check(workspace)) for e in CURRICULUM if e.key in keys]
