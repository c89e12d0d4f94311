"""Running the conformance suite against a webhook, and keeping its latest report.

`plan` reads everything from the database first; the caller then ends its transaction so no
connection is held while `run` waits on the endpoint; `save` stores the report afterwards.
The checks run concurrently, each on its own thread with one deadline (the delivery timeout,
15 s by default, for all of the check's requests), and the run waits at most that plus a
second: a check still waiting then is reported as timed out and its sockets are shut down.
"""

from __future__ import annotations

import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from flask import Flask
from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from console import runslots
from console.clock.services import now
from console.conformance import sender
from console.conformance.checks import (
    ACCEPT_EVERY_EVENT,
    SEE_SIGNED_EVENT,
    Check,
    Outcome,
    Plan,
    Run,
    sample_note,
    suite,
    unsubscribed_not_sent,
)
from console.conformance.models import ConformanceReport
from console.core.errors import NotFound
from console.core.timeutil import isoformat
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import secret_of
from console.webhooks.delivery import Transport
from console.webhooks.delivery_loop import settings
from console.webhooks.models import Webhook
from console.workspaces.models import Workspace

log = logging.getLogger(__name__)
GRACE_SECONDS = 1.0  # past the per-check deadline, before a still-running check is given up


def plan(app: Flask, webhook: Webhook, workspace: Workspace) -> Plan:
    """What the suite needs from the database, as plain values (the owner key's secret included)."""
    key = db.session.get(ApiKey, webhook.api_key_id)
    return Plan(
        target=sender.Target(webhook.id, webhook.workspace_id, webhook.mode, webhook.url),
        secret=secret_of(key),
        api_key_id=webhook.api_key_id,
        version=webhook.version,
        enabled_events=tuple(webhook.enabled_events),
        at=now(workspace),
        timeout=settings(app)["timeout"],
    )


def _run_check(check: Check, run: Run) -> Outcome:
    try:
        verdict = check.run(run)
    except Exception:  # a bug in a check must not take the report down with it
        log.exception("conformance check %s failed unexpectedly", check.name)
        return Outcome(check.name, check.title, False, "The check itself failed (an internal error).")
    return Outcome(check.name, check.title, verdict.passed, verdict.detail, verdict.warning, run.exchanges)


REFUSAL_CHECKS = ("forged_signature", "altered_body", "stale_timestamp")


def _qualify_refusals(outcomes: list[Outcome]) -> None:
    """An endpoint that refuses everything passes the refusal checks without verifying anything, and fails the
    event checks for a reason that is not the event (a receiver verifying with the wrong secret, one of
    another mode): say so, rather than advising it to accept fields it does not use."""
    signed = next(o for o in outcomes if o.name == "signed_event")
    refused_good = signed.exchanges and signed.exchanges[-1].received.refused
    if not refused_good:
        return
    for outcome in outcomes:
        if outcome.name in REFUSAL_CHECKS and outcome.passed:
            outcome.warning = (
                "the correctly signed event was refused too, so this refusal proves little: fix signed_event "
                "first, then run the check again"
            )
        refused_event = outcome.exchanges and outcome.exchanges[-1].received.refused
        if outcome.name.startswith("event:") and not outcome.passed and refused_event:
            outcome.detail = outcome.detail.replace(ACCEPT_EVERY_EVENT, SEE_SIGNED_EVENT)


def run(app: Flask, plan: Plan) -> dict[str, Any]:
    """Run every check against the webhook's endpoint at once; the report (`data` of the API answer)."""
    started = time.perf_counter()
    transport = Transport(app)
    checks = suite(plan)

    def send(request: sender.Request, timeout: float) -> sender.Received:
        return sender.send(plan.target, request, transport=transport, timeout=timeout)

    pool = ThreadPoolExecutor(len(checks), thread_name_prefix="conformance")
    try:
        runs = [Run(plan, send) for _ in checks]
        futures = [pool.submit(_run_check, check, r) for check, r in zip(checks, runs, strict=True)]
        # Decided here: a check woken by the abort below finishes with a misleading error, not its answer.
        with runslots.released():  # waiting on the endpoint under test, not running
            finished = wait(futures, timeout=plan.timeout + GRACE_SECONDS).done
        given_up = {
            i: r.given_up() for i, (r, f) in enumerate(zip(runs, futures, strict=True)) if f not in finished
        }
    finally:
        transport.abort()  # wakes a check still blocked on a socket; its late answer is not used
        pool.shutdown(wait=False, cancel_futures=True)
    outcomes = []
    for i, (check, future) in enumerate(zip(checks, futures, strict=True)):
        if future in finished:
            outcomes.append(future.result())
        else:
            detail = (
                f"No complete answer within {plan.timeout:g} s: real deliveries would time out and be retried. "
                "Answer within 15 s; do slow work after answering."
            )
            outcomes.append(Outcome(check.name, check.title, False, detail, exchanges=given_up[i]))
    _qualify_refusals(outcomes)
    outcomes.append(unsubscribed_not_sent(plan))
    return {
        "webhook_id": str(plan.target.webhook_id),
        "url": plan.target.url,
        "version": plan.version,
        "enabled_events": list(plan.enabled_events),
        "passed": all(o.passed for o in outcomes),
        "ran_at": isoformat(plan.at),
        "duration_ms": int((time.perf_counter() - started) * 1000),
        "sample_note": sample_note(plan),
        "checks": [o.as_dict() for o in outcomes],
    }


def _report_row(webhook_id: uuid.UUID) -> ConformanceReport | None:
    return db.session.scalars(
        select(ConformanceReport).where(ConformanceReport.webhook_id == webhook_id)
    ).first()


def save(plan: Plan, report: dict[str, Any]) -> None:
    """Keep `report` as the webhook's latest, replacing the previous one (one upsert: two runs may race)."""
    target = plan.target
    dialect = postgresql if db.session.get_bind().dialect.name == "postgresql" else sqlite
    values = {"passed": report["passed"], "ran_at": plan.at, "report": report}
    statement = dialect.insert(ConformanceReport.__table__).values(
        id=uuid.uuid4(),
        workspace_id=target.workspace_id,
        mode=target.mode,
        webhook_id=target.webhook_id,
        **values,
    )
    db.session.execute(statement.on_conflict_do_update(index_elements=["webhook_id"], set_=values))


def latest(webhook: Webhook) -> dict[str, Any]:
    """The webhook's latest report, or NotFound when it was never checked."""
    row = _report_row(webhook.id)
    if row is None:
        raise NotFound(
            f"Webhook {webhook.id} has no conformance report yet: run POST "
            f"/v1/sandbox/webhooks/{webhook.id}/conformance."
        )
    return row.report


def latest_by_webhook(workspace_id: uuid.UUID, mode: str) -> dict[uuid.UUID, dict[str, Any]]:
    """Each webhook's latest report in a workspace and mode, for the console's list."""
    rows = db.session.scalars(
        select(ConformanceReport).where(
            ConformanceReport.workspace_id == workspace_id, ConformanceReport.mode == mode
        )
    )
    return {row.webhook_id: row.report for row in rows}
