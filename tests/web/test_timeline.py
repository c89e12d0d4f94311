"""Job timelines per Link token and per account, and the clock controls that move them."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from console.accounts.models import Account
from console.extensions import db
from tests.web.helpers import run_headless


def outcomes(html: str) -> list[str]:
    """The `to` outcome of each transition, in order."""
    return re.findall(r'→ <span class="badge badge-[a-z]+">([a-z]+)</span>', html)


def test_a_scenario_lands_on_its_timeline_with_its_calls(visitor):
    link_token_id = run_headless(visitor, "user_good")
    landing = visitor.client.get(f"/timeline/link-tokens/{link_token_id}?exchanges=x").get_data(as_text=True)
    assert outcomes(landing) == ["success"]
    assert "direct_deposit_switch.added" in landing
    index = visitor.get("/timeline").get_data(as_text=True)
    assert link_token_id in index


def test_a_pending_job_shows_its_next_retry_then_resolves_when_the_clock_moves(visitor, rendered):
    link_token_id = run_headless(visitor, "user_pending_success")
    html = visitor.get(f"/timeline/link-tokens/{link_token_id}").get_data(as_text=True)
    assert outcomes(html) == ["pending"]
    assert "Next retry due" in html and "on the workspace clock" in html
    rendered.clear()
    form = {"by": "hour", "timeline_kind": "link_token", "timeline_id": link_token_id}
    html = visitor.post("/clock/advance", form, htmx=True).get_data(as_text=True)
    assert rendered == ["console/timeline/_timeline.html"]
    assert outcomes(html) == ["pending", "success"]
    assert "Next retry due" not in html
    assert "Clock advanced." in html and "/sandbox/v1/sandbox/clock/advance" in html


def test_federal_benefits_go_from_processing_to_sent_one_business_day_later(visitor):
    link_token_id = run_headless(visitor, "federal_sent")
    html = visitor.get(f"/timeline/link-tokens/{link_token_id}").get_data(as_text=True)
    assert outcomes(html) == ["processing"] and "Agency review due" in html
    form = {"by": "business_day", "timeline_kind": "link_token", "timeline_id": link_token_id}
    html = visitor.post("/clock/advance", form, htmx=True).get_data(as_text=True)
    assert outcomes(html) == ["processing", "sent"]


def test_the_account_timeline_spans_its_tokens(app, visitor):
    run_headless(visitor, "user_good")
    with app.app_context():
        account = db.session.scalars(
            select(Account).where(Account.workspace_id == visitor.workspace_id)
        ).one()
    html = visitor.get(f"/timeline/accounts/{account.id}").get_data(as_text=True)
    assert "Account timeline" in html and outcomes(html) == ["success"]
    assert "account.added" in html


def test_the_clock_page_advances_through_the_api(visitor):
    before = visitor.get("/clock").get_data(as_text=True)
    assert "Nothing scheduled." in before
    html = visitor.post("/clock/advance", {"by": "month"}, htmx=True).get_data(as_text=True)
    assert "Clock advanced." in html and "30 d ahead of real time" in html
    assert visitor.post("/clock/advance", {"by": "year"}).status_code == 400


def test_unknown_or_malformed_ids_are_404(visitor):
    assert visitor.get("/timeline/link-tokens/not-a-uuid").status_code == 404
    assert visitor.get("/timeline/accounts/6f1c2a8e-5b7d-4c39-9e0a-3d2f4b6a8c10").status_code == 404


def test_an_expired_token_without_a_job_says_so_instead_of_inviting_to_open_link(app, visitor):
    from tests.web.test_request_log import LINK_TOKEN, outside

    link_token_id = outside(app, visitor).post("/link_tokens", json=LINK_TOKEN).get_json()["data"]["id"]
    page = visitor.get(f"/timeline/link-tokens/{link_token_id}").get_data(as_text=True)
    assert "open Link with this token" in page and "expired" not in page
    assert "none yet" in visitor.get("/timeline").get_data(as_text=True)
    form = {"by": "amount", "amount": "2", "unit": "hours", "confirmed": "1"}
    assert visitor.post("/clock/advance", form, htmx=True).status_code == 200
    page = visitor.get(f"/timeline/link-tokens/{link_token_id}").get_data(as_text=True)
    assert "this Link token expired before one started" in page and "open Link with this token" not in page
    index = visitor.get("/timeline").get_data(as_text=True)
    assert "none: expired" in index and "none yet" not in index


def test_the_count_of_other_tokens_items_says_at_least_when_it_stopped_looking(visitor, monkeypatch):
    """The timeline counts other tokens' items among the next SCOPE_LOOKAHEAD only; with more scheduled it
    said a number that was too small as if it were all (193 where thousands were due)."""
    from console.web.clock import moves as clockmoves

    mine = run_headless(visitor, "user_pending_success")  # its expiry and its retry
    for _ in range(2):
        run_headless(visitor, "user_pending_success")  # 4 items of other tokens
    html = visitor.get(f"/timeline/link-tokens/{mine}").get_data(as_text=True)
    assert "(4 items of other tokens scheduled" in html
    monkeypatch.setattr(clockmoves, "SCOPE_LOOKAHEAD", 4)
    html = visitor.get(f"/timeline/link-tokens/{mine}").get_data(as_text=True)
    assert re.search(r"\(at least \d items of other tokens scheduled", html), html


@pytest.mark.both_backends
def test_a_timeline_reads_only_its_own_jobs_scheduled_tasks(app, visitor):
    """Every timeline render read every pending task of the workspace to find its jobs' next steps: with
    thousands pending (open tokens' expiries, hourly retries) that was thousands of rows a render."""
    from sqlalchemy import event

    from console.scheduler.models import ScheduledTask
    from console.web.timeline import queries
    from console.workspaces.models import Workspace

    mine = run_headless(visitor, "user_pending_success")
    for _ in range(5):
        run_headless(visitor, "user_pending_timeout")  # 10 pending tasks of other tokens
    loaded: list = []

    def count(target, context):
        loaded.append(target)

    with app.app_context():
        workspace = db.session.get(Workspace, visitor.workspace_id)
        event.listen(ScheduledTask, "load", count)
        try:
            timeline = queries.for_link_token(workspace, "sandbox", mine)
        finally:
            event.remove(ScheduledTask, "load", count)
        [job] = timeline.jobs
        assert job.next_step is not None and job.next_step.label == "Next retry due"
        assert [t.payload.get("job_id") for t in loaded] == [str(job.job.id)]
