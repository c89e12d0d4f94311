"""The clock page: moves by amount, jump and next item, the confirmation before open tokens expire, the
scheduled list in the reader's words, the header clock, and the live polls answering 204 when unchanged."""

from __future__ import annotations

import re
from html import unescape

from sqlalchemy import select

from console.extensions import db
from console.link_tokens.models import LinkToken
from tests.web.helpers import run_headless
from tests.web.test_walkthrough import link_token_form


def open_token(app, visitor) -> str:
    """A Link token created in the walkthrough and never opened."""
    visitor.post("/walkthrough/link-token", link_token_form(), htmx=True)
    with app.app_context():
        return str(
            db.session.scalars(
                select(LinkToken.id)
                .where(LinkToken.workspace_id == visitor.workspace_id)
                .order_by(LinkToken.created_at.desc())
            ).first()
        )


def text(response) -> str:
    return unescape(response.get_data(as_text=True))


def test_the_scheduled_list_says_what_each_item_will_do(app, visitor):
    token = open_token(app, visitor)
    run_headless(visitor, "user_pending_success")
    html = text(visitor.get("/clock"))
    assert f"Link token {token} will expire unused" in html
    assert "retries the switch (attempt 1): pending → success" in html
    assert 'data-due="' in html  # counted down by console.js
    assert "job.retry" not in html  # kinds are not what a reader sees


def test_advance_by_an_amount_and_a_bad_amount_on_its_field(visitor):
    visitor.start()
    html = text(
        visitor.post("/clock/advance", {"by": "amount", "amount": "90", "unit": "seconds"}, htmx=True)
    )
    assert "Clock advanced." in html and "+1 min ahead of real time" in html
    html = text(
        visitor.post("/clock/advance", {"by": "amount", "amount": "soon", "unit": "hours"}, htmx=True)
    )
    assert (
        'aria-invalid="true" aria-describedby="clk-amount-error"' in html
        and "Amount must be a number" in html
    )
    html = text(visitor.post("/clock/advance", {"by": "amount", "amount": "500", "unit": "days"}, htmx=True))
    assert "Amount moves the clock more than 400 days" in html  # the API's field error, on the field
    for huge in ("1e309", "inf", "9" * 400):  # positive, but past what a float holds
        html = text(
            visitor.post("/clock/advance", {"by": "amount", "amount": huge, "unit": "seconds"}, htmx=True)
        )
        assert "Amount moves the clock more than 400 days" in html and "more than 0" not in html
    html = text(visitor.post("/clock/advance", {"by": "amount", "amount": "nan", "unit": "hours"}, htmx=True))
    assert "Amount must be a number" in html
    assert visitor.post("/clock/advance", {"by": "year"}).status_code == 400
    tampered = visitor.post(
        "/clock/advance", {"by": "amount", "amount": "1", "unit": "fortnights"}, htmx=True
    )
    assert tampered.status_code == 400
    assert "Unit must be one of seconds, hours, days, business days" in text(tampered)


def test_jump_to_the_past_is_refused_on_the_field_and_to_the_future_moves(visitor):
    visitor.start()
    html = text(visitor.post("/clock/advance", {"by": "jump", "to": "2001-01-01T00:00"}, htmx=True))
    assert "The moment must be later than the workspace clock" in html
    assert 'aria-invalid="true" aria-describedby="clk-to-error"' in html
    assert "Clock advanced." not in html
    html = text(visitor.post("/clock/advance", {"by": "jump", "to": "9999-12-31T23:59-01:00"}, htmx=True))
    assert "The moment must be a date and time" in html
    html = text(visitor.post("/clock/advance", {"by": "jump", "to": "2999-01-01T00:00"}, htmx=True))
    assert "moves the clock more than 400 days" in html
    # A year before 1000 reaches the API as a date it reads (zero-padded), and is refused as the past.
    html = text(visitor.post("/clock/advance", {"by": "jump", "to": "0001-01-01T00:00"}, htmx=True))
    assert "The moment must be later than the workspace clock" in html
    page = text(visitor.get("/clock"))
    now = re.search(r'data-clock-now="(\d{4})-(\d\d)-(\d\d)T', page).groups()
    target = f"{int(now[0]) + 1}-{now[1]}-{min(int(now[2]), 28):02d}T12:00"
    html = text(visitor.post("/clock/advance", {"by": "jump", "to": target}, htmx=True))
    assert "Clock advanced." in html and "ahead of real time" in html


def test_next_fires_the_next_item_only(visitor):
    link_token_id = run_headless(visitor, "user_pending_success")
    run_headless(visitor, "federal_sent")
    form = {"by": "next", "timeline_kind": "link_token", "timeline_id": link_token_id}
    html = text(visitor.post("/clock/advance", form, htmx=True))
    assert "1 scheduled task ran:" in html, html[
        html.find("Advance the workspace") - 200 : html.find("Jobs<")
    ]
    assert "retried the switch (attempt 1): pending → success (retry succeeded)" in html
    assert "agency review" not in html.split("1 scheduled task ran:")[1].split("</ol>")[0]


def test_a_move_that_would_expire_open_tokens_asks_first(app, visitor):
    token = open_token(app, visitor)
    html = text(visitor.post("/clock/advance", {"by": "day"}, htmx=True))
    assert "This move would expire 1 open Link token:" in html
    assert f"Link token {token} (never opened)" in html
    assert "Clock advanced." not in html and 'name="confirmed" value="1"' in html
    assert "real time: the clock has not been moved" in html
    html = text(visitor.post("/clock/advance", {"by": "day", "confirmed": "1"}, htmx=True))
    assert "Clock advanced." in html and f"Link token {token} expired unused" in html
    # Once expired, nothing is left to warn about.
    assert "would expire" not in text(visitor.post("/clock/advance", {"by": "day"}, htmx=True))


def test_every_page_shows_the_workspace_clock_in_the_header(visitor):
    visitor.start()
    html = text(visitor.get("/events"))
    assert 'id="clock-bar"' in html and "ahead" not in html.split('id="clock-bar"')[1][:400]
    visitor.post("/clock/advance", {"by": "day"}, htmx=True)
    for page in ("/events", "/timeline", "/requests", "/clock"):
        bar = text(visitor.get(page)).split('id="clock-bar"')[1].split("</p>")[0]
        # "of real time" is for wide screens only: a phone's header says "(+1 d ahead" and fits its line.
        assert (
            "Workspace clock" in bar and '(+1 d ahead<span class="wide-only"> of real time</span>' in bar
        ), page


def test_polls_answer_204_until_something_changes(visitor):
    link_token_id = run_headless(visitor, "user_pending_success")
    html = text(visitor.get(f"/timeline/link-tokens/{link_token_id}"))
    poll = re.search(r'id="timeline-body" hx-get="([^"]+)"', html).group(1)
    assert visitor.get(poll, htmx=True).status_code == 204
    clock_poll = re.search(r'id="clock-scheduled"[^>]*?hx-get="([^"]+)"', text(visitor.get("/clock"))).group(
        1
    )
    index_poll = re.search(r'id="timelines" hx-get="([^"]+)"', text(visitor.get("/timeline"))).group(1)
    assert visitor.get(clock_poll, htmx=True).status_code == 204
    assert visitor.get(index_poll, htmx=True).status_code == 204
    visitor.post("/clock/advance", {"by": "next"}, htmx=True)
    redrawn = visitor.get(poll, htmx=True)
    assert redrawn.status_code == 200 and "retry succeeded" in text(redrawn)
    assert visitor.get(clock_poll, htmx=True).status_code == 200
    assert visitor.get(index_poll, htmx=True).status_code == 200


def test_the_request_log_polls_for_new_calls(visitor):
    visitor.start()
    html = text(visitor.get("/requests"))
    poll = re.search(r'id="request-poller" hx-get="([^"]+)"', html).group(1)
    assert visitor.get(poll, htmx=True).status_code == 204
    visitor.post("/clock/advance", {"by": "hour"}, htmx=True)
    answer = text(visitor.get(poll, htmx=True))
    assert 'hx-swap-oob="afterbegin:#request-list"' in answer and "/sandbox/clock/advance" in answer
    newer = re.search(r'id="request-poller" hx-get="([^"]+)"', answer).group(1)
    assert visitor.get(newer, htmx=True).status_code == 204


def test_a_move_that_runs_many_tasks_lists_the_first_and_counts_the_rest(visitor):
    """A day of hourly retries for three jobs is 72 tasks; thousands made the result box megabytes long."""
    from console.web.clock.moves import FIRED_SHOWN

    for _ in range(3):
        run_headless(visitor, "user_pending_timeout")
    html = text(visitor.post("/clock/advance", {"by": "day", "confirmed": "1"}, htmx=True))
    ran = int(re.search(r"Clock advanced.</strong> (\d+) scheduled tasks ran", html).group(1))
    assert ran >= 72
    box = html.split("Clock advanced.")[1].split("</ol>")[0]
    assert box.count("<li>") == FIRED_SHOWN
    assert f"… and {ran - FIRED_SHOWN} more after these" in html


def test_the_confirmation_says_when_a_move_would_expire_production_tokens(app, visitor):
    """The clock is the workspace's (docs/jobs.md): a sandbox move expires production tokens too, so the
    console names their mode instead of listing them like sandbox ones."""
    from tests.factories import make_parties

    sandbox = open_token(app, visitor)
    with app.app_context():
        live, _ = make_parties(visitor.workspace_id, "production")
        db.session.commit()
        live = str(live.id)
    html = text(visitor.post("/clock/advance", {"by": "hour"}, htmx=True))
    assert "This move would expire 2 open Link tokens:" in html
    items = html.split("open Link tokens:")[1].split("</ul>")[0].split("<li>")
    assert next(i for i in items if live in i).startswith('<span class="badge">production</span>')
    assert "badge" not in next(i for i in items if sandbox in i)
    assert "not only the sandbox's: production tokens expire too" in html
    only_sandbox = text(visitor.post("/clock/advance", {"by": "hour", "confirmed": "1"}, htmx=True))
    assert "Clock advanced." in only_sandbox and "not only the sandbox's" not in only_sandbox


def test_the_confirmation_lists_the_first_open_tokens_and_counts_the_rest(app, visitor):
    """A CI run can leave hundreds of open tokens: the confirmation listed every one."""
    from console.web.clock.moves import CONFIRM_SHOWN
    from tests.factories import make_parties

    with app.app_context():
        for _ in range(CONFIRM_SHOWN + 2):
            make_parties(visitor.workspace_id)
        make_parties(visitor.workspace_id, "production")  # expires last: not in the list
        db.session.commit()
    html = text(visitor.post("/clock/advance", {"by": "day"}, htmx=True))
    assert f"This move would expire {CONFIRM_SHOWN + 3} open Link tokens:" in html
    assert html.split("open Link tokens:")[1].split("</ul>")[0].count("<li>") == CONFIRM_SHOWN
    assert "… and 3 more, expiring by" in html
    assert "not only the sandbox's: production tokens expire too" in html  # said for the unlisted one too


def test_without_htmx_a_move_that_needs_confirming_shows_the_question(app, visitor):
    """A plain form post (htmx not loaded) that would expire an open token was redirected to the page and
    the question dropped: the button did nothing, silently. A bad field was dropped the same way."""
    token = open_token(app, visitor)
    asked = visitor.post("/clock/advance", {"by": "day"})
    assert asked.status_code == 200
    html = text(asked)
    assert "<html" in html and "This move would expire 1 open Link token:" in html and token in html
    assert 'name="confirmed" value="1"' in html
    refused = text(visitor.post("/clock/advance", {"by": "amount", "amount": "soon", "unit": "hours"}))
    assert "<html" in refused and "Amount must be a number" in refused
    past = text(visitor.post("/clock/advance", {"by": "jump", "to": "2001-01-01T00:00"}))  # the API refuses
    assert "<html" in past and "The moment must be later than the workspace clock" in past
    moved = visitor.post("/clock/advance", {"by": "day", "confirmed": "1"})
    assert moved.status_code == 302  # after a move, back to the page: a reload does not move it again
    assert "+1 d ahead of real time" in text(visitor.get("/clock"))


def test_without_htmx_a_timeline_move_that_needs_confirming_shows_the_timeline_with_it(app, visitor):
    link_token_id = run_headless(visitor, "user_pending_success")
    open_token(app, visitor)
    form = {"by": "day", "timeline_kind": "link_token", "timeline_id": link_token_id}
    html = text(visitor.post("/clock/advance", form))
    assert (
        "<html" in html
        and "Link token timeline" in html
        and "This move would expire 1 open Link token:" in html
    )
    assert visitor.post("/clock/advance", {**form, "confirmed": "1"}).status_code == 302


def test_an_empty_schedule_says_what_waits_there(visitor):
    # "Nothing scheduled." said nothing of what the list is for, on a page a newcomer opens from the header.
    page = unescape(visitor.get("/clock").get_data(as_text=True))
    assert "Nothing scheduled. A pending switch's retry, a federal switch's next business day" in page
    assert re.search(r'<a href="/scenarios">user_pending_success</a>', page)
