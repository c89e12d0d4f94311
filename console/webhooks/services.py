"""Registering webhooks (validation, URL policy, quota), fanning events out, pausing and reactivating."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from pydantic import ValidationInfo, field_validator
from sqlalchemy import func, select, update

from console.clock.services import now, real_time_of
from console.core.bodies import RequestModel, array, one_of, refusal, text, validate
from console.core.errors import (
    Conflict,
    FieldError,
    Forbidden,
    NotFound,
    ServiceError,
    shown,
)
from console.core.timeutil import isoformat, utcnow
from console.db.locking import lock_row
from console.events.models import EVENT_TYPES, Event
from console.extensions import db
from console.keys.models import ApiKey
from console.modes import SANDBOX
from console.scheduler import agenda
from console.scheduler.services import TaskKind, schedule
from console.versions import SUPPORTED_VERSIONS
from console.webhooks import own_inbox, urls
from console.webhooks.models import (
    ACTIVE,
    FAILED,
    PAUSED,
    PENDING,
    SKIPPED,
    WEBHOOK_STATUSES,
    Webhook,
    WebhookDelivery,
)
from console.workspaces.models import Workspace

MAX_WEBHOOKS_PER_KEY = 10  # the default of WEBHOOKS_PER_KEY
PAUSE_AFTER = timedelta(days=30)
PAUSE_CHECK_TASK = "webhook.pause_check"
FIELDS = ("url", "status", "enabled_events", "version")
# The skip reason of a delivery the console held back on purpose (training: recover a missed webhook).
HELD_REASON = "held back (exercise)"
UNSUBSCRIBED_REASON = "webhook unsubscribed from the event's type"


# Validation ---------------------------------------------------------------------------------

MAX_URL_LENGTH = 2048
RELAYED_KEEPS_ITS_URL = "a relayed webhook keeps its url; delete it and create a webhook instead"
MAX_ENABLED_EVENTS = 10  # four types exist; repeats collapse


def check_url(url: Any, mode: str, workspace_id: uuid.UUID) -> str:
    """The URL policy for this deployment; a workspace's own built-in inbox is exempt (sent in-process)."""
    config = current_app.config
    if urls.is_relay_url(url):
        raise urls.UrlRefused(
            "is the address of a relayed webhook; create one with POST /v1/sandbox/listen (console listen)"
        )
    if mode == SANDBOX and own_inbox.OwnInbox.from_config(config).workspace_of(url) == workspace_id:
        return url
    return urls.check_url(url, mode, urls.Policy.from_config(config), owner=str(workspace_id))


def _not_an_event(value: Any) -> str:
    shown = value[:50] if isinstance(value, str) else type(value).__name__
    return f"{shown!r} is not an event; valid: {', '.join(EVENT_TYPES)}"


Url = text(
    MAX_URL_LENGTH,
    format="uri",
    description="https://; the sandbox also accepts http://localhost, 127.0.0.1, [::1].",
)
Status = one_of(WEBHOOK_STATUSES, description="paused: events are recorded as skipped, resendable later.")
EnabledEvents = array(
    one_of(EVENT_TYPES, message=_not_an_event),
    max_items=MAX_ENABLED_EVENTS,
    not_a_list="must be a non-empty array of event names",
)
Version = one_of(SUPPORTED_VERSIONS, description="The payload version deliveries are shaped for.")


class WebhookUpdateRequest(RequestModel):
    """PUT /v1/webhooks/{id}: any subset of the fields; `status: active` reactivates a paused webhook."""

    url: Url | None = None
    status: Status | None = None
    enabled_events: EnabledEvents | None = None
    version: Version | None = None

    @field_validator("url")
    @classmethod
    def _url_policy(cls, url: str | None, info: ValidationInfo) -> str | None:
        if url is None:
            return None
        context = info.context or {}
        if context.get("relayed_url"):
            # A relayed webhook's url is the relay's: the same one sent back (a PUT of the object as read) is no
            # change, and any other is refused as such, before its host is looked up.
            if url == context["relayed_url"]:
                return url
            raise refusal(RELAYED_KEEPS_ITS_URL)
        try:
            return check_url(url, context["mode"], context["workspace_id"])
        except urls.UrlRefused as exc:
            raise refusal(str(exc)) from None


class WebhookRequest(WebhookUpdateRequest):
    """POST /v1/webhooks: every field is required."""

    url: Url
    status: Status
    enabled_events: EnabledEvents
    version: Version


def _event_names_message(fields: list[FieldError]) -> str | None:
    if any(f.name.startswith("enabled_events[") for f in fields):
        return f"Invalid request parameters. Valid event names: {', '.join(EVENT_TYPES)}."
    return None


def _validate(
    body: Any,
    mode: str,
    workspace_id: uuid.UUID,
    model: type[WebhookUpdateRequest],
    relayed_url: str | None = None,
) -> dict[str, Any]:
    """The cleaned fields that were given, or one 400 naming every bad field."""
    context = {"mode": mode, "workspace_id": workspace_id, "relayed_url": relayed_url}
    request = validate(model, body, context=context, message=_event_names_message)
    cleaned = request.model_dump(exclude_none=True)
    if "enabled_events" in cleaned:
        cleaned["enabled_events"] = list(
            dict.fromkeys(cleaned["enabled_events"])
        )  # repeats collapse, order kept
    return cleaned


# CRUD ---------------------------------------------------------------------------------------


def _scope(workspace_id: uuid.UUID, mode: str):
    return select(Webhook).where(
        Webhook.workspace_id == workspace_id, Webhook.mode == mode, Webhook.deleted_at.is_(None)
    )


def list_query(workspace_id: uuid.UUID, mode: str):
    """Webhooks of a workspace and mode (every key's), for pagination."""
    return _scope(workspace_id, mode)


def get_webhook(workspace_id: uuid.UUID, mode: str, webhook_id: uuid.UUID | str) -> Webhook:
    try:
        ident = uuid.UUID(str(webhook_id))
    except ValueError as exc:
        raise NotFound(f"No webhook with id {shown(webhook_id)}.") from exc
    webhook = db.session.scalars(_scope(workspace_id, mode).where(Webhook.id == ident)).first()
    if webhook is None:
        raise NotFound(f"No webhook with id {shown(webhook_id)}.")
    return webhook


def webhooks_per_key() -> int:
    """`WEBHOOKS_PER_KEY`: the live webhooks one API key may own."""
    return int(current_app.config.get("WEBHOOKS_PER_KEY", MAX_WEBHOOKS_PER_KEY))


def webhooks_per_mode() -> int:
    """The live webhooks one workspace may hold in a mode: `WEBHOOKS_PER_KEY` for each of its
    `API_KEYS_PER_MODE` keys. A revoked key's webhooks stay live (docs/webhooks.md), so the per-key quota alone
    let a workspace revoke a key and create another for 10 more webhooks, without end, every event fanning out
    to all of them."""
    return webhooks_per_key() * int(current_app.config.get("API_KEYS_PER_MODE", 10))


def live_count(workspace_id: uuid.UUID, mode: str) -> int:
    """How many live (not deleted) webhooks the workspace has in `mode`, whichever key owns them."""
    return db.session.scalar(
        select(func.count())
        .select_from(Webhook)
        .where(Webhook.workspace_id == workspace_id, Webhook.mode == mode, Webhook.deleted_at.is_(None))
    )


def create_webhook(key: ApiKey, body: Any) -> Webhook:
    """Register a webhook owned by `key`; the 11th live one of a key is refused."""
    cleaned = _validate(body, key.mode, key.workspace_id, WebhookRequest)
    return add_webhook(key, cleaned["url"], cleaned["enabled_events"], cleaned["version"], cleaned["status"])


def add_webhook(key: ApiKey, url: str, enabled_events: list[str], version: str, status: str) -> Webhook:
    """Insert a webhook whose fields are valid, within the key's quota."""
    # Lock the key row so two concurrent creates cannot both pass the quota.
    lock_row(ApiKey, key.id)
    limit = webhooks_per_key()
    if owned_count(key.id) >= limit:
        raise Forbidden(
            f"This API key already has {limit} webhooks, the limit per key. "
            "Delete one (DELETE /v1/webhooks/{id}) before creating another.",
            code="WEBHOOK_LIMIT_REACHED",
        )
    per_mode = webhooks_per_mode()
    if live_count(key.workspace_id, key.mode) >= per_mode:
        raise Forbidden(
            f"This workspace already has {per_mode} live {key.mode} webhooks, the limit per workspace and mode "
            "(revoked keys' webhooks count until deleted). Delete one (DELETE /v1/webhooks/{id}) before creating "
            "another.",
            code="WEBHOOK_LIMIT_REACHED",
        )
    at = now(key.workspace)
    webhook = Webhook(
        id=uuid.uuid4(),
        workspace_id=key.workspace_id,
        mode=key.mode,
        api_key_id=key.id,
        url=url,
        status=ACTIVE,
        enabled_events=enabled_events,
        version=version,
        created_at=at,
        updated_at=at,
    )
    db.session.add(webhook)
    if status == PAUSED:
        pause(webhook, at, reason="requested")
    db.session.flush()
    return webhook


def update_webhook(webhook: Webhook, workspace: Workspace, body: Any) -> Webhook:
    """Change any field; `status: active` on a paused webhook reactivates it."""
    if not body:
        raise ServiceError(f"Send at least one of {', '.join(FIELDS)}.")
    relayed_url = webhook.url if urls.is_relay_url(webhook.url) else None
    cleaned = _validate(body, webhook.mode, webhook.workspace_id, WebhookUpdateRequest, relayed_url)
    if not cleaned:  # only nulls ({"status": null}): nothing to change, as for an empty body
        raise ServiceError(f"Send at least one of {', '.join(FIELDS)} (null is not a value).")
    at = now(workspace)
    for name in ("url", "enabled_events", "version"):
        if name in cleaned:
            setattr(webhook, name, cleaned[name])
    if "enabled_events" in cleaned:
        skip_pending(webhook, UNSUBSCRIBED_REASON, unsubscribed_only=True)
    status = cleaned.get("status")
    if status == ACTIVE and webhook.status == PAUSED:
        reactivate(webhook, at)
    elif status == PAUSED and webhook.status == ACTIVE:
        pause(webhook, at, reason="requested")
    webhook.updated_at = at
    db.session.flush()
    return webhook


def delete_webhook(webhook: Webhook, workspace: Workspace) -> None:
    """Soft delete: nothing more is sent, and the event log keeps its history."""
    at = now(workspace)
    webhook.deleted_at = at
    webhook.updated_at = at
    skip_pending(webhook, "webhook deleted")
    db.session.flush()


def owned_count(key_id: uuid.UUID) -> int:
    """How many live (not deleted) webhooks `key_id` owns, i.e. signs."""
    return db.session.scalar(
        select(func.count())
        .select_from(Webhook)
        .where(Webhook.api_key_id == key_id, Webhook.deleted_at.is_(None))
    )


def reassign_owner(old_key: ApiKey, new_key: ApiKey) -> int:
    """Move webhooks to a rolled key, so they are signed with the secret the customer now holds."""
    result = db.session.execute(
        update(Webhook)
        .where(Webhook.api_key_id == old_key.id, Webhook.deleted_at.is_(None))
        .values(api_key_id=new_key.id)
    )
    return result.rowcount or 0


def serialize(webhook: Webhook) -> dict[str, Any]:
    return {
        "id": str(webhook.id),
        "url": webhook.url,
        "status": webhook.status,
        "enabled_events": list(webhook.enabled_events),
        "version": webhook.version,
        "mode": webhook.mode,
        "api_key_id": str(webhook.api_key_id),
        "created_at": isoformat(webhook.created_at),
        "updated_at": isoformat(webhook.updated_at),
        "paused_at": isoformat(webhook.paused_at),
        "pause_reason": webhook.pause_reason,
        "failing_since": isoformat(webhook.failing_since),
        "last_success_at": isoformat(webhook.last_success_at),
        "relayed": urls.is_relay_url(webhook.url),
    }


# Fan-out ------------------------------------------------------------------------------------


def new_delivery(
    event: Event, webhook: Webhook, workspace: Workspace, *, is_test: bool = False
) -> WebhookDelivery:
    """A delivery of `event` to `webhook`: pending, or skipped while the webhook is paused or while the
    workspace holds back the event's Link token from its own endpoints (training exercise 5)."""
    held = not is_test and _held_back(event, webhook, workspace)
    skipped = (webhook.status == PAUSED and not is_test) or held
    return WebhookDelivery(
        id=uuid.uuid4(),
        workspace_id=event.workspace_id,
        mode=event.mode,
        event_id=event.id,
        webhook_id=webhook.id,
        status=SKIPPED if skipped else PENDING,
        skip_reason=HELD_REASON if held else "webhook paused" if skipped else None,
        is_test=is_test,
        relayed=urls.is_relay_url(webhook.url),
        due_at=event.created_at,
        # Never later than now: an event stamped ahead of real time would otherwise wait.
        run_after=min(real_time_of(workspace, event.created_at), utcnow()),
        created_at=event.created_at,
    )


def _held_back(event: Event, webhook: Webhook, workspace: Workspace | None) -> bool:
    """The workspace's held Link token's events skip every webhook but the console's own inbox."""
    held = workspace.held_link_token_id if workspace is not None else None
    if held is None or event.link_token_id != held:
        return False
    return not own_inbox.is_inbox_of(current_app.config["SECRET_KEY"], workspace.id, webhook.url)


def fan_out(event: Event) -> list[WebhookDelivery]:
    """One delivery per live webhook of the event's workspace and mode subscribed to its type."""
    # No autoflush: the reads run before the event's INSERT, so on SQLite the write lock is taken
    # only by record_event's one flush of the event and its deliveries together.
    with db.session.no_autoflush:
        hooks = db.session.scalars(_scope(event.workspace_id, event.mode)).all()
        subscribed = [h for h in hooks if event.type in (h.enabled_events or [])]
        if not subscribed:
            return []
        workspace = db.session.get(Workspace, event.workspace_id)
    deliveries = [new_delivery(event, hook, workspace) for hook in subscribed]
    db.session.add_all(deliveries)
    return deliveries


# Resending ----------------------------------------------------------------------------------


def _new_round(at: datetime) -> dict[str, Any]:
    """Column values starting a new round: up to 6 attempts within 15 minutes, from now.

    `attempt_count` keeps counting (it numbers the attempts); `round_attempts` back to 0 is what
    says "not tried in this round yet", so the console shows the delivery queued, not retrying.
    """
    return {
        "status": PENDING,
        "skip_reason": None,
        "round_attempts": 0,
        "first_attempt_at": None,
        "due_at": at,
        "run_after": utcnow(),
        # An attempt still in flight finishes, but its result no longer moves this delivery.
        "claim_token": None,
        "claimed_until": None,
    }


def requeue(delivery: WebhookDelivery, at: datetime) -> None:
    """Send `delivery` again now, as a new round (resend)."""
    for name, value in _new_round(at).items():
        setattr(delivery, name, value)


def replay_failed(webhook: Webhook, workspace: Workspace, since: datetime) -> int:
    """Send again every delivery to `webhook` that failed, of events at or after `since` (workspace clock).

    Failed means given up on (its round's attempts used up, or a 4xx); skipped deliveries (paused)
    are not failures and are resent one by one (POST /v1/events/{id}/resend).
    """
    if webhook.status != ACTIVE:
        raise Conflict(f"Webhook {webhook.id} is paused; make it active (PUT status=active) and replay.")
    result = db.session.execute(
        update(WebhookDelivery)
        .where(
            WebhookDelivery.webhook_id == webhook.id,
            WebhookDelivery.status == FAILED,
            WebhookDelivery.created_at >= since,
            # Only subscribed events are sent (a sandbox test event was asked for, whatever its type).
            WebhookDelivery.is_test.is_(True) | WebhookDelivery.event_id.in_(_events_of_types(webhook)),
        )
        .values(**_new_round(now(workspace)))
        .execution_options(synchronize_session=False)
    )
    db.session.flush()
    return result.rowcount or 0


# Pausing ------------------------------------------------------------------------------------


def skip_pending(webhook: Webhook, reason: str, *, unsubscribed_only: bool = False) -> None:
    """Mark the webhook's pending deliveries skipped (resendable later); `unsubscribed_only`: only those of event
    types it no longer subscribes to (only subscribed events are sent, and a retry of a type it dropped went on
    for up to 15 minutes)."""
    # Pending rows only: an attempt in flight finishes and is recorded as usual.
    conditions = [
        WebhookDelivery.webhook_id == webhook.id,
        WebhookDelivery.status == PENDING,
        WebhookDelivery.is_test.is_(False),
    ]
    statement = update(WebhookDelivery).values(
        status=SKIPPED, skip_reason=reason, claim_token=None, claimed_until=None
    )
    if unsubscribed_only:
        conditions.append(WebhookDelivery.event_id.in_(_events_of_types(webhook, subscribed=False)))
        # A subquery the session cannot evaluate in Python on the objects it holds.
        statement = statement.execution_options(synchronize_session=False)
    db.session.execute(statement.where(*conditions))


def _events_of_types(webhook: Webhook, *, subscribed: bool = True):
    """The ids of the webhook's workspace and mode's events of a type it is (or is not) subscribed to."""
    types = list(webhook.enabled_events or [])
    chosen = Event.type.in_(types) if subscribed else Event.type.not_in(types)
    return select(Event.id).where(
        Event.workspace_id == webhook.workspace_id, Event.mode == webhook.mode, chosen
    )


def pause(webhook: Webhook, at: datetime, *, reason: str) -> None:
    """Pause: later events are recorded as skipped (resendable); pending ones are skipped too."""
    webhook.status = PAUSED
    webhook.paused_at = at
    webhook.pause_reason = reason
    webhook.updated_at = at
    skip_pending(webhook, "webhook paused")


def reactivate(webhook: Webhook, at: datetime) -> None:
    """Make a paused webhook active again; its 30-day failure count starts over."""
    webhook.status = ACTIVE
    webhook.paused_at = None
    webhook.pause_reason = None
    webhook.failing_since = None
    webhook.pause_check_at = None
    webhook.updated_at = at


def note_attempt(webhook: Webhook, workspace: Workspace, at: datetime, status_code: int | None) -> None:
    """Track the run without a 200 OK; 30 days of it pause the webhook."""
    if status_code == 200:
        # At most one write a second while all is well: a busy webhook would otherwise update its row
        # on every batch, and nothing needs last_success_at more precisely than that.
        if webhook.last_success_at is None or at - webhook.last_success_at >= timedelta(seconds=1):
            webhook.last_success_at = at
        if webhook.failing_since is not None or webhook.pause_check_at is not None:
            webhook.failing_since = None
            webhook.pause_check_at = None
        return
    if webhook.failing_since is None:
        webhook.failing_since = at
    if webhook.status == ACTIVE and at - webhook.failing_since >= PAUSE_AFTER:
        pause(webhook, at, reason="failing")
    elif webhook.status == ACTIVE:
        _schedule_pause_check(webhook, workspace)


def _schedule_pause_check(webhook: Webhook, workspace: Workspace) -> None:
    """So advancing the clock 30 days pauses a failing webhook even when no new event arrives."""
    due = webhook.failing_since + PAUSE_AFTER
    if webhook.pause_check_at is not None and webhook.pause_check_at <= due:
        return
    schedule(workspace, PAUSE_CHECK_TASK, due, {"webhook_id": str(webhook.id)})
    webhook.pause_check_at = due


def check_pause(webhook_id: uuid.UUID | str, workspace: Workspace, at: datetime | None = None) -> bool:
    """The scheduled check: pause if still without a 200 OK for 30 days; True when it paused.

    `at` is the moment the check was due (workspace clock), so a check run late (a clock advance of
    more than 30 days, a stopped worker) records the pause when it happened, as other scheduled steps do."""
    webhook = db.session.get(Webhook, uuid.UUID(str(webhook_id)))
    if webhook is None or webhook.deleted_at is not None or webhook.status != ACTIVE:
        return False
    at = min(at, now(workspace)) if at is not None else now(workspace)
    if webhook.pause_check_at is not None and webhook.pause_check_at > at:
        return False  # a later failing run already has its own check
    webhook.pause_check_at = None
    if webhook.failing_since is None:
        return False
    if at - webhook.failing_since >= PAUSE_AFTER:
        pause(webhook, at, reason="failing")
        db.session.flush()
        return True
    _schedule_pause_check(webhook, workspace)  # a newer failing run: check again at its 30 days
    return False


def _pause_check(task, workspace: Workspace) -> str:
    paused = check_pause(task.payload["webhook_id"], workspace, task.due_at)
    if paused:
        return f"Webhook {task.payload['webhook_id']} paused: no 200 OK for 30 days"
    return f"Webhook {task.payload['webhook_id']} stays active (not failing for 30 days)"


def _describe_pause_check(task) -> str:
    return f"Webhook {task.payload['webhook_id']} is paused if it still has had no 200 OK for 30 days"


def _pending_deliveries(workspace_id: uuid.UUID, after: datetime | None) -> list:
    query = [WebhookDelivery.workspace_id == workspace_id, WebhookDelivery.status == PENDING]
    if after is not None:
        query.append(WebhookDelivery.due_at > after)
    return query


def _delivery_items(workspace_id: uuid.UUID, limit: int, after: datetime | None) -> list[agenda.Item]:
    """Pending deliveries as scheduled items: the first attempt or a retry, due on the workspace clock."""
    rows = db.session.execute(
        select(WebhookDelivery, Event.type, Webhook.url)
        .join(Event, Event.id == WebhookDelivery.event_id)
        .join(Webhook, Webhook.id == WebhookDelivery.webhook_id)
        .where(*_pending_deliveries(workspace_id, after))
        .order_by(WebhookDelivery.due_at, WebhookDelivery.id)
        .limit(limit)
    )
    items = []
    inbox = own_inbox.OwnInbox.from_config(current_app.config)
    for delivery, event_type, url in rows:
        attempt = delivery.attempt_count + 1
        what = "first attempt" if attempt == 1 else f"attempt {attempt}"
        # The workspace's own inbox by name: its address is a long signed token that reads as noise. Only an
        # address the worker delivers to the inbox (on one of this service's roots, `own_inbox`): the token on
        # another host goes to that host, so it is named as it is.
        target = "the built-in inbox" if inbox.workspace_of(url) == workspace_id else url
        items.append(
            agenda.Item(
                delivery.due_at,
                "webhook.delivery",
                f"Webhook delivery {delivery.id} of {event_type} to {target}: {what}",
                payload={
                    "delivery_id": str(delivery.id),
                    "event_id": str(delivery.event_id),
                    "webhook_id": str(delivery.webhook_id),
                    "attempt": attempt,
                },
            )
        )
    return items


def _next_delivery_due(workspace_id: uuid.UUID, after: datetime | None) -> datetime | None:
    return db.session.scalar(
        select(func.min(WebhookDelivery.due_at)).where(*_pending_deliveries(workspace_id, after))
    )


# Pending deliveries on a workspace's agenda (registered by create_app).
AGENDA_SOURCE = agenda.Source(_delivery_items, _next_delivery_due)


# The scheduled task kinds this module runs (registered by create_app: console.scheduler.services).
TASKS = (TaskKind(PAUSE_CHECK_TASK, _pause_check, _describe_pause_check),)
