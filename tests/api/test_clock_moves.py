"""Moving the workspace clock to a moment (jump) and to its next scheduled item, and what each item says."""

from __future__ import annotations

import uuid
from datetime import timedelta

from console.core.timeutil import isoformat, parse_datetime
from tests.api.test_sandbox_complete import PAYCREST, SANDBOX_MATCH_IDENTITIES, complete, creds, new_token, ok
from tests.api.test_webhooks import LOCAL
from tests.api.test_webhooks import create as create_webhook
from tests.conftest import assert_error
from tests.factories import new_switch


def clock_now(api):
    return parse_datetime(api.get("/sandbox/clock").get_json()["data"]["now"])


def test_jump_moves_the_clock_to_the_moment_and_fires_what_became_due(app, api, workspace):
    with app.app_context():
        job = str(new_switch(workspace.id, "federal_sent").id)
    target = clock_now(api) + timedelta(days=10)
    data = ok(api.post("/sandbox/clock/jump", json={"to": isoformat(target)}))
    assert abs(parse_datetime(data["now"]) - target) < timedelta(seconds=5)
    [fired] = data["fired"]
    assert fired["summary"] == f"Job {job} agency review ended: processing → sent"
    assert api.get(f"/jobs/{job}").get_json()["data"]["outcome"] == "sent"


def test_jump_to_the_past_or_now_is_a_field_error_and_moves_nothing(api):
    before = clock_now(api)
    for moment in (before - timedelta(hours=1), before):
        error = assert_error(
            api.post("/sandbox/clock/jump", json={"to": isoformat(moment)}), 400, "INVALID_REQUEST_PARAMETERS"
        )
        [field] = error["fields"]
        assert field["name"] == "to" and field["message"].startswith("must be later than the workspace clock")
    assert api.get("/sandbox/clock").get_json()["data"]["offset_seconds"] == 0


def test_jump_refuses_bad_moments_and_more_than_400_days(api):
    for body, message in [
        ({"to": "tomorrow"}, "must be an ISO 8601 date and time"),
        ({"to": "0001-01-01T00:00+01:00"}, "must be an ISO 8601 date and time"),  # before year 1 in UTC
        ({"to": "9999-12-31T23:59-01:00"}, "must be an ISO 8601 date and time"),  # after year 9999 in UTC
        ({"to": 5}, "must be a string"),
        ({}, "is required"),
        ({"to": isoformat(clock_now(api) + timedelta(days=401))}, "moves the clock more than 400 days"),
    ]:
        error = assert_error(api.post("/sandbox/clock/jump", json=body), 400, "INVALID_REQUEST_PARAMETERS")
        assert error["fields"][0]["name"] == "to" and error["fields"][0]["message"].startswith(message)


def test_a_naive_moment_is_utc(api):
    target = (clock_now(api) + timedelta(days=1)).replace(tzinfo=None, microsecond=0)
    data = ok(api.post("/sandbox/clock/jump", json={"to": target.isoformat()}))
    assert parse_datetime(data["now"]).replace(tzinfo=None) - target < timedelta(seconds=5)


def test_next_fires_exactly_the_next_item_and_nothing_after(app, api, workspace):
    with app.app_context():
        retry_job = str(new_switch(workspace.id, "pending_then_success").id)  # retry due in 60 s
        review_job = str(new_switch(workspace.id, "federal_sent").id)  # due in a business day
    data = ok(api.post("/sandbox/clock/advance_to_next"))
    assert data["advanced_to"]["kind"] == "job.retry"
    assert (
        data["advanced_to"]["description"]
        == f"Job {retry_job} retries the switch (attempt 1): pending → success"
    )
    assert [f["summary"] for f in data["fired"]] == [
        f"Job {retry_job} retried the switch (attempt 1): pending → success (retry succeeded)"
    ]
    assert parse_datetime(data["now"]) >= parse_datetime(data["advanced_to"]["due_at"])
    assert api.get(f"/jobs/{review_job}").get_json()["data"]["outcome"] == "processing"
    # The next one is the review, a business day away: one more press fires it (and only it).
    data = ok(api.post("/sandbox/clock/advance_to_next", json={}))
    assert [f["kind"] for f in data["fired"]] == ["job.federal_review"]
    assert api.get(f"/jobs/{review_job}").get_json()["data"]["outcome"] == "sent"


def test_next_with_nothing_scheduled_is_a_conflict(api):
    assert_error(
        api.post("/sandbox/clock/advance_to_next"), 409, "INVALID_REQUEST_PARAMETERS", "NOTHING_SCHEDULED"
    )
    error = assert_error(
        api.post("/sandbox/clock/advance_to_next", json={"x": 1}), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert error["fields"][0]["name"] == "x"


def test_token_expiry_is_described_and_reported_in_the_readers_words(api):
    unused = new_token(api)
    used = new_token(api)
    ok(complete(api, used, platform_id=PAYCREST, credentials=creds("user_good")))
    due = {
        item["payload"].get("link_token_id"): item
        for item in api.get("/sandbox/clock").get_json()["data"]["next_due"]
    }
    assert due[unused["id"]]["description"] == f"Link token {unused['id']} will expire unused"
    assert due[used["id"]]["description"].startswith(
        f"Link token {used['id']} expires; its flow already ended (success)"
    )
    data = ok(api.post("/sandbox/clock/advance", json={"hours": 2}))
    summaries = {f["summary"] for f in data["fired"]}
    assert f"Link token {unused['id']} expired unused" in summaries
    assert f"Link token {used['id']} expired; its flow had already ended (success)" in summaries
    assert not any("flow success" in s for s in summaries)


def test_clock_lists_pending_webhook_deliveries(app, api, workspace):
    create_webhook(api, enabled_events=["direct_deposit_switch.added"])
    with app.app_context():
        new_switch(workspace.id, "success")
    items = api.get("/sandbox/clock").get_json()["data"]["next_due"]
    [delivery] = [i for i in items if i["kind"] == "webhook.delivery"]
    assert delivery["task_id"] is None
    assert delivery["description"] == (
        f"Webhook delivery {delivery['payload']['delivery_id']} of direct_deposit_switch.added to "
        f"{LOCAL}: first attempt"
    )


def test_a_delivery_to_the_workspaces_own_inbox_is_listed_by_name_not_by_its_signed_url(app, api, workspace):
    """The clock spelled out `http://…/inbox/<a long signed token>` for the console's own inbox."""
    from console.webhooks.own_inbox import token_for

    root = f"http://127.0.0.1:{app.config['LISTEN_PORT']}/inbox/"
    secret_key = app.config["SECRET_KEY"]
    own = root + token_for(secret_key, uuid.UUID(workspace.id))
    # The same token on another host is delivered there, not to the inbox: named as registered.
    other = "http://127.0.0.1:9/inbox/" + token_for(secret_key, uuid.UUID(workspace.id))
    events = ["direct_deposit_switch.added"]
    hooks = {create_webhook(api, url=url, enabled_events=events)["id"]: url for url in (own, other, LOCAL)}
    with app.app_context():
        new_switch(workspace.id, "success")
    items = api.get("/sandbox/clock").get_json()["data"]["next_due"]
    described = {
        hooks[i["payload"]["webhook_id"]]: i["description"] for i in items if i["kind"] == "webhook.delivery"
    }
    assert described[own].endswith("of direct_deposit_switch.added to the built-in inbox: first attempt")
    assert token_for(secret_key, uuid.UUID(workspace.id)) not in described[own]
    assert described[other].endswith(f"to {other}: first attempt")
    assert described[LOCAL].endswith(f"to {LOCAL}: first attempt")


def test_a_token_open_mid_flow_is_described_listed_and_expired_as_such(app, api, workspace):
    import uuid

    from console.clock.services import now
    from console.extensions import db
    from console.link import flow as link_flow
    from console.link.expiry import open_tokens_expiring_by
    from console.link_tokens.models import LinkToken
    from console.workspaces.models import Workspace

    opened, unused, used = new_token(api), new_token(api), new_token(api)
    ok(complete(api, used, platform_id=PAYCREST, credentials=creds("user_good")))
    with app.app_context():
        link_flow.load(db.session.get(LinkToken, uuid.UUID(opened["id"])))  # Link shows its intro
        db.session.commit()
        ws = db.session.get(Workspace, uuid.UUID(str(workspace.id)))
        assert open_tokens_expiring_by(ws, now(ws) + timedelta(minutes=30)) == []  # they live an hour
        listed = {str(o.link_token.id): o for o in open_tokens_expiring_by(ws, now(ws) + timedelta(hours=2))}
        assert set(listed) == {opened["id"], unused["id"]}  # the finished one is not open
        assert listed[opened["id"]].described == f"Link token {opened['id']} (open on the intro screen)"
        assert listed[unused["id"]].described == f"Link token {unused['id']} (never opened)"
    due = {
        i["payload"].get("link_token_id"): i for i in api.get("/sandbox/clock").get_json()["data"]["next_due"]
    }
    assert (
        due[opened["id"]]["description"]
        == f"Link token {opened['id']} will expire mid-flow (open on the intro screen)"
    )
    fired = {f["summary"] for f in ok(api.post("/sandbox/clock/advance", json={"hours": 2}))["fired"]}
    # A standard switch's token carries no matching data, so nothing is said to be erased.
    assert f"Link token {opened['id']} expired mid-flow on the intro screen" in fired


def test_a_platform_matching_token_expired_mid_flow_says_its_matching_data_was_erased(app, api):
    from console.extensions import db
    from console.link import flow as link_flow
    from console.link_tokens.models import LinkToken

    matching = new_token(api, end_user={"platform_matching": SANDBOX_MATCH_IDENTITIES["one"]})
    with app.app_context():
        link_flow.load(db.session.get(LinkToken, uuid.UUID(matching["id"])))  # Link shows its intro
        db.session.commit()
    fired = {f["summary"] for f in ok(api.post("/sandbox/clock/advance", json={"hours": 2}))["fired"]}
    assert (
        f"Link token {matching['id']} expired mid-flow on the intro screen; its matching data was erased"
        in fired
    )
    with app.app_context():
        assert db.session.get(LinkToken, uuid.UUID(matching["id"])).platform_matching is None
