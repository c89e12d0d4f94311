"""The webhooks page starts the endpoint conformance check through the API, polls the run, shows the report."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select

from console.conformance import runs
from console.conformance.models import ConformanceReport
from console.events.models import Event
from console.extensions import db
from console.modes import SANDBOX
from console.web.requests import queries as requestlog
from console.web.webhooks import queries as webhooklist
from console.web.webhooks.models import InboxMessage
from console.webhooks.models import WebhookDelivery

pytestmark = pytest.mark.committing


def inbox_webhook_id(app, visitor) -> str:
    with app.app_context():
        [hook] = webhooklist.list_webhooks(visitor.workspace_id, SANDBOX)
        return str(hook.id)


def test_the_built_in_inbox_passes_the_check(app, visitor):
    hook_id = inbox_webhook_id(app, visitor)
    page = visitor.get("/webhooks").get_data(as_text=True)
    assert (
        f"/webhooks/{hook_id}/conformance" in page
        and "Run conformance check" in page
        and "not checked" in page
    )

    # The API queues a run and answers at once: the section says it is running and polls.
    response = visitor.post(f"/webhooks/{hook_id}/conformance", htmx=True)
    assert response.status_code == 200
    started = response.get_data(as_text=True)
    assert "running…" in started and "Waiting for the worker" in started and "✓ passed" not in started
    poll = (
        re.search(r'hx-get="(/webhooks/[^"]+/conformance/poll\?[^"]+)"', started)
        .group(1)
        .replace("&amp;", "&")
    )
    assert "status=queued" in poll and 'hx-trigger="every 2s, live-refresh"' in started
    assert visitor.get(poll, htmx=True).status_code == 204  # nothing changed yet: nothing to redraw
    assert runs.run_due(app) == 1  # what the worker does
    response = visitor.get(poll, htmx=True)
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert "running…" not in html and "/conformance/poll" not in html  # done: the polling stops
    # 5 checks of the signature and delivery rules, 5 event shapes (4 types, a switch twice), 1 of ours.
    assert "11 of 11 checks passed" in html
    assert f'id="conformance-badge-{hook_id}" hx-swap-oob="true"' in html and "✓ conformant" in html
    # The exchanges are there to expand: the forged one was refused by the inbox with its reason.
    assert "no matching signature" in html and "message timestamp too old" in html
    assert "x-service-conformance" in html

    with app.app_context():
        # The call went through the API and shows in the request log; nothing entered the event log.
        row = requestlog.latest(visitor.workspace_id, "conformance")
        assert row.method == "POST" and row.path == f"/sandbox/v1/sandbox/webhooks/{hook_id}/conformance"
        assert row.status == 202
        assert db.session.scalar(select(func.count()).select_from(Event)) == 0
        assert db.session.scalar(select(func.count()).select_from(WebhookDelivery)) == 0
        report = db.session.scalars(select(ConformanceReport)).one()
        assert report.passed and str(report.webhook_id) == hook_id
        # The inbox kept what it got, marked as conformance traffic.
        messages = db.session.scalars(
            select(InboxMessage).where(InboxMessage.workspace_id == visitor.workspace_id)
        ).all()
        assert messages and all(m.headers.get("x-service-conformance") == "true" for m in messages)
        assert sum(m.verified for m in messages) == 8 and sum(not m.verified for m in messages) == 3

    # The page and the report page show the kept result; the report page can run it again.
    assert "✓ conformant" in visitor.get("/webhooks").get_data(as_text=True)
    report_page = visitor.get(f"/webhooks/{hook_id}/conformance").get_data(as_text=True)
    assert "✓ passed" in report_page and "Run again" in report_page
    # When it ran, in the console's one format for a moment ("Sun 29 Nov 2026 02:15:22"), not ISO-like.
    ran = re.search(r'ran <time datetime="[^"]+">([^<]+)</time> \(workspace clock\)', report_page).group(1)
    assert re.fullmatch(r"\w{3} \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2}", ran), ran
    assert "conformance check" in visitor.get("/webhooks").get_data(as_text=True)  # the inbox badge


def test_without_htmx_the_run_redirects_to_the_report(app, visitor):
    hook_id = inbox_webhook_id(app, visitor)
    response = visitor.post(f"/webhooks/{hook_id}/conformance")
    assert response.status_code == 302
    assert response.headers["Location"].endswith(f"/webhooks/{hook_id}/conformance")


def test_a_failing_report_and_the_api_error_show(app, visitor):
    hook_id = inbox_webhook_id(app, visitor)
    visitor.post(f"/webhooks/{hook_id}/delete", htmx=True)
    html = visitor.post(f"/webhooks/{hook_id}/conformance", htmx=True).get_data(as_text=True)
    assert "No webhook with id" in html and "Run conformance check" not in html
    assert visitor.get(f"/webhooks/{hook_id}/conformance").status_code == 404


def test_the_run_needs_the_csrf_token(app, visitor):
    hook_id = inbox_webhook_id(app, visitor)
    response = visitor.post(f"/webhooks/{hook_id}/conformance", csrf=False)
    assert response.status_code in (400, 403)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(ConformanceReport)) == 0


def test_another_visitors_webhook_is_not_checked(app, visitor, other_visitor):
    hook_id = inbox_webhook_id(app, visitor)
    html = other_visitor.post(f"/webhooks/{hook_id}/conformance", htmx=True).get_data(as_text=True)
    assert "No webhook with id" in html
    assert other_visitor.get(f"/webhooks/{hook_id}/conformance").status_code == 404
    assert re.search(r"✓ passed", html) is None


def test_a_second_run_while_one_is_active_shows_the_apis_409(app, visitor):
    hook_id = inbox_webhook_id(app, visitor)
    visitor.post(f"/webhooks/{hook_id}/conformance", htmx=True)
    page = visitor.get(f"/webhooks/{hook_id}/conformance").get_data(as_text=True)
    assert "running…" in page and re.search(r"<button type=\"submit\" disabled>", page)
    html = visitor.post(f"/webhooks/{hook_id}/conformance", htmx=True).get_data(as_text=True)
    assert "already queued or running" in html and "running…" in html
    runs.run_due(app)
    assert "✓ passed" in visitor.get(f"/webhooks/{hook_id}/conformance").get_data(as_text=True)


def test_conformance_traffic_does_not_tick_the_walkthroughs_inbox_step(app, visitor):
    from tests.web.test_walkthrough import done_steps

    visitor.post(f"/webhooks/{inbox_webhook_id(app, visitor)}/conformance", htmx=True)
    runs.run_due(app)
    assert done_steps(visitor.get("/").get_data(as_text=True)) == ["key", "webhook"]
    with app.app_context():
        messages = db.session.scalars(select(InboxMessage)).all()
        assert messages and all(m.conformance for m in messages)
