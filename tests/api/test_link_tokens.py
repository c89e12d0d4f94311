"""POST /v1/link_tokens: every field rule, with precise field errors."""

from __future__ import annotations

import copy
import re
import uuid
from datetime import datetime, timedelta

import pytest

from tests.conftest import assert_error
from tests.factories import LINK_TOKEN, MATCHING, TARGET

DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00$")


def body(**changes):
    result = copy.deepcopy(LINK_TOKEN)
    for key, value in changes.items():
        if value is ...:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def with_matching(**changes):
    matching = dict(MATCHING)
    for key, value in changes.items():
        if value is ...:
            matching.pop(key, None)
        else:
            matching[key] = value
    return body(end_user={"platform_matching": matching})


def field_names(response) -> set[str]:
    return {f["name"] for f in response.get_json()["error"]["fields"]}


def expect_fields(response, *names):
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert field_names(response) == set(names), error
    return error


def test_creates_a_token(api):
    response = api.post("/link_tokens", json=LINK_TOKEN)
    assert response.status_code == 200
    data = response.get_json()["data"]
    assert set(response.get_json()) == {"data"}
    assert set(data) == {"id", "expires", "mode", "token"}
    assert str(uuid.UUID(data["id"])) == data["id"]
    assert data["mode"] == "sandbox"
    assert DATETIME.match(data["expires"])
    expires = datetime.fromisoformat(data["expires"])
    remaining = expires - datetime.now(expires.tzinfo)
    assert timedelta(minutes=59) < remaining <= timedelta(hours=1)


def test_token_is_random_and_opaque(api):
    tokens = [api.post("/link_tokens", json=LINK_TOKEN).get_json()["data"]["token"] for _ in range(3)]
    assert len(set(tokens)) == 3
    for token in tokens:
        assert len(token) >= 40
        assert LINK_TOKEN["end_user_id"] not in token and "Acme" not in token and "sandbox" not in token


def test_token_is_not_stored_in_clear(app, api):
    from console.extensions import db
    from console.link_tokens.models import LinkToken

    data = api.post("/link_tokens", json=LINK_TOKEN).get_json()["data"]
    with app.app_context():
        row = db.session.get(LinkToken, uuid.UUID(data["id"]))
        assert data["token"] not in repr(vars(row))
        assert row.token_hash != data["token"]


def test_token_expiry_follows_the_workspace_clock(app, api, workspace):
    from console.extensions import db
    from console.workspaces.models import Workspace

    with app.app_context():
        db.session.get(Workspace, uuid.UUID(workspace.id)).clock_offset_seconds = 86_400 * 3
        db.session.commit()
    expires = datetime.fromisoformat(api.post("/link_tokens", json=LINK_TOKEN).get_json()["data"]["expires"])
    assert expires - datetime.now(expires.tzinfo) > timedelta(days=2, hours=23)


@pytest.mark.parametrize("field", ["org_name", "allocation", "required_jobs"])
def test_required_fields(api, field):
    expect_fields(api.post("/link_tokens", json=body(**{field: ...})), field)


def test_all_bad_fields_are_reported_at_once(api):
    response = api.post(
        "/link_tokens",
        json={
            "org_name": 5,
            "required_jobs": ["teleport"],
            "allocation": {
                "targets": [{"type": "brokerage", "routing_number": "123456789", "account_number": "12"}]
            },
            "skip_intro_screen": "yes",
        },
    )
    expect_fields(
        response,
        "org_name",
        "required_jobs[0]",
        "allocation.targets[0].type",
        "allocation.targets[0].routing_number",
        "allocation.targets[0].account_number",
        "skip_intro_screen",
    )


def test_unknown_fields_are_refused(api):
    expect_fields(api.post("/link_tokens", json=body(colour="blue")), "colour")


@pytest.mark.parametrize("targets", [[], "checking", None])
def test_targets_must_be_a_non_empty_array(api, targets):
    expect_fields(api.post("/link_tokens", json=body(allocation={"targets": targets})), "allocation.targets")


@pytest.mark.parametrize("kind", ["checking", "savings"])
def test_target_types(api, kind):
    response = api.post("/link_tokens", json=body(allocation={"targets": [dict(TARGET, type=kind)]}))
    assert response.status_code == 200


@pytest.mark.parametrize("routing", ["123456789", "01100001", "0110000150", "01100001a", 11000015])
def test_routing_number_needs_nine_digits_and_the_aba_checksum(api, routing):
    response = api.post(
        "/link_tokens", json=body(allocation={"targets": [dict(TARGET, routing_number=routing)]})
    )
    expect_fields(response, "allocation.targets[0].routing_number")


@pytest.mark.parametrize(
    ("account", "ok"),
    [("1234", True), ("1" * 17, True), ("123", False), ("1" * 18, False), ("12ab34", False)],
)
def test_account_number_is_4_to_17_digits(api, account, ok):
    response = api.post(
        "/link_tokens", json=body(allocation={"targets": [dict(TARGET, account_number=account)]})
    )
    if ok:
        assert response.status_code == 200
    else:
        expect_fields(response, "allocation.targets[0].account_number")


def test_second_target_errors_name_their_index(api):
    targets = [TARGET, dict(TARGET, routing_number="000000000x")]
    expect_fields(
        api.post("/link_tokens", json=body(allocation={"targets": targets})),
        "allocation.targets[1].routing_number",
    )


@pytest.mark.parametrize("jobs", [[], "direct_deposit_switch", None])
def test_required_jobs_must_be_a_non_empty_array(api, jobs):
    expect_fields(api.post("/link_tokens", json=body(required_jobs=jobs)), "required_jobs")


def test_known_job_names_are_accepted(api):
    response = api.post(
        "/link_tokens", json=body(required_jobs=["direct_deposit_switch", "employment", "income"])
    )
    assert response.status_code == 200


def test_end_user_id_is_optional(api):
    assert api.post("/link_tokens", json=body(end_user_id=...)).status_code == 200


@pytest.mark.parametrize(
    "value", ["ada@example.com", "555-123-4567", "5551234567", "123-45-6789", "123456789"]
)
def test_end_user_id_must_not_carry_personal_data(api, value):
    error = expect_fields(api.post("/link_tokens", json=body(end_user_id=value)), "end_user_id")
    assert "personal data" in error["fields"][0]["message"]


def test_platform_matching_is_accepted(api):
    assert api.post("/link_tokens", json=with_matching()).status_code == 200


def test_platform_matching_accepts_the_last_four(api):
    response = api.post(
        "/link_tokens", json=with_matching(social_security_number=..., social_security_last_four="6789")
    )
    assert response.status_code == 200


def test_platform_matching_needs_one_form_of_ssn(api):
    response = api.post("/link_tokens", json=with_matching(social_security_number=...))
    expect_fields(response, "end_user.platform_matching.social_security_number")


def test_platform_matching_refuses_both_forms_of_ssn(api):
    response = api.post("/link_tokens", json=with_matching(social_security_last_four="6789"))
    expect_fields(response, "end_user.platform_matching")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("social_security_number", "12345678"),
        ("social_security_number", "12345678a"),
        ("social_security_last_four", "123"),
        ("first_name", ""),
        ("last_name", None),
        ("date_of_birth", "17/05/1990"),
        ("date_of_birth", "1990-02-30"),
        ("date_of_birth", "2999-01-01"),
        ("mobile_phone_number", "15551234567"),
        ("mobile_phone_number", "555123456"),
        ("home_address_zip_code", "9410"),
        ("home_address_zip_code", "94107-1234"),
        ("email", "ada.example.com"),
        ("email", "ada@localhost"),
        ("email", "ada@example"),
        ("email", "ada@example.c"),
    ],
)
def test_platform_matching_field_rules(api, field, value):
    if field == "social_security_last_four":
        payload = with_matching(social_security_number=..., social_security_last_four=value)
    else:
        payload = with_matching(**{field: value})
    expect_fields(api.post("/link_tokens", json=payload), f"end_user.platform_matching.{field}")


@pytest.mark.parametrize(
    "field",
    ["first_name", "last_name", "date_of_birth", "mobile_phone_number", "home_address_zip_code", "email"],
)
def test_platform_matching_required_fields(api, field):
    expect_fields(
        api.post("/link_tokens", json=with_matching(**{field: ...})), f"end_user.platform_matching.{field}"
    )


def test_invalid_email_is_400(api):
    response = api.post("/link_tokens", json=with_matching(email="not-an-email"))
    assert response.status_code == 400


def test_platform_matching_with_skip_intro_screen_is_400(api):
    payload = with_matching()
    payload["skip_intro_screen"] = True
    error = expect_fields(api.post("/link_tokens", json=payload), "skip_intro_screen")
    assert "terms" in error["fields"][0]["message"]


def test_skip_intro_screen_alone_is_fine(api):
    assert api.post("/link_tokens", json=body(skip_intro_screen=True)).status_code == 200


def _first_id(app, model):
    from sqlalchemy import select

    from console.extensions import db

    with app.app_context():
        return str(db.session.scalars(select(model.id).order_by(model.id)).first())


def test_platform_and_employer_ids_must_exist(app, api):
    from console.world.models import Employer, Platform

    assert api.post("/link_tokens", json=body(platform_id=_first_id(app, Platform))).status_code == 200
    assert api.post("/link_tokens", json=body(employer_id=_first_id(app, Employer))).status_code == 200
    missing = str(uuid.uuid4())
    expect_fields(api.post("/link_tokens", json=body(platform_id=missing)), "platform_id")
    expect_fields(api.post("/link_tokens", json=body(employer_id=missing)), "employer_id")
    expect_fields(api.post("/link_tokens", json=body(platform_id="not-a-uuid")), "platform_id")


@pytest.mark.parametrize("route", ["platform_id", "employer_id"])
def test_platform_matching_with_a_direct_route_goes_directly_and_keeps_no_matching_data(app, api, route):
    """Spec: with platform_id or employer_id the user goes directly to that platform, with no matching flow.
    The matching data is still checked, but not stored: nothing would read it."""
    from console.extensions import db
    from console.link_tokens.models import LinkToken
    from console.world.models import Employer, Platform

    target = _first_id(app, Platform if route == "platform_id" else Employer)
    payload = with_matching()
    payload[route] = target
    response = api.post("/link_tokens", json=payload)
    assert response.status_code == 200, response.get_json()
    with app.app_context():
        token = db.session.get(LinkToken, uuid.UUID(response.get_json()["data"]["id"]))
        assert str(getattr(token, route)) == target and token.platform_matching is None
    bad = with_matching(email="not-an-email")
    bad[route] = target
    expect_fields(api.post("/link_tokens", json=bad), "end_user.platform_matching.email")


def _make_account(app, workspace, mode="sandbox", partner=False):
    from sqlalchemy import select

    from console.accounts.models import Account
    from console.extensions import db
    from console.world.models import Platform

    with app.app_context():
        platform = db.session.scalars(
            select(Platform)
            .where(Platform.is_partner.is_(partner), Platform.type == "payroll")
            .order_by(Platform.id)
        ).first()
        account = Account(
            workspace_id=uuid.UUID(workspace.id),
            mode=mode,
            end_user_id="user-first",
            link_token_id=uuid.uuid4(),
            platform_id=platform.id,
            platform_name=platform.name,
        )
        db.session.add(account)
        db.session.commit()
        return str(account.id)


def test_on_demand_update_needs_no_end_user_id_and_inherits_it(app, api, workspace):
    from console.extensions import db
    from console.link_tokens.models import LinkToken

    account_id = _make_account(app, workspace)
    response = api.post("/link_tokens", json=body(end_user_id=..., account_id=account_id))
    assert response.status_code == 200, response.get_json()
    with app.app_context():
        row = db.session.get(LinkToken, uuid.UUID(response.get_json()["data"]["id"]))
        assert row.end_user_id == "user-first"
        assert str(row.account_id) == account_id


def test_account_must_belong_to_this_workspace_and_mode(app, client, api, api_for, workspace):
    from console.extensions import db
    from console.keys.services import create_key
    from console.workspaces.services import create_workspace
    from tests.conftest import Api

    account_id = _make_account(app, workspace, mode="sandbox")
    expect_fields(api_for("development").post("/link_tokens", json=body(account_id=account_id)), "account_id")
    with app.app_context():
        other = create_workspace("Other")
        secret = create_key(other.id, "sandbox").secret
        db.session.commit()
    expect_fields(Api(client, secret).post("/link_tokens", json=body(account_id=account_id)), "account_id")
    expect_fields(api.post("/link_tokens", json=body(account_id=str(uuid.uuid4()))), "account_id")


def test_on_demand_update_on_a_partner_platform_needs_matching_data_again(app, api, workspace):
    account_id = _make_account(app, workspace, partner=True)
    error = expect_fields(
        api.post("/link_tokens", json=body(account_id=account_id, end_user_id=...)),
        "end_user.platform_matching",
    )
    assert "partner" in error["fields"][0]["message"]
    payload = with_matching()
    payload["account_id"] = account_id
    del payload["end_user_id"]  # it carries over from the first connection
    assert api.post("/link_tokens", json=payload).status_code == 200


def test_on_demand_update_with_another_end_user_id_is_refused(app, api, workspace):
    """The token was made, and its switch's event carried the other end_user_id while the account kept the
    first: a backend tying events to users by end_user_id filed the switch under the wrong person."""
    account_id = _make_account(app, workspace)  # its end_user_id is user-first
    error = expect_fields(
        api.post("/link_tokens", json=body(account_id=account_id, end_user_id="user-other")), "end_user_id"
    )
    assert error["fields"][0]["message"] == (
        f"differs from the end_user_id of account {account_id} (user-first), which an on-demand update keeps: "
        "leave end_user_id out, or send that one"
    )
    for same in ("user-first", ...):
        response = api.post("/link_tokens", json=body(account_id=account_id, end_user_id=same))
        assert response.status_code == 200, response.get_json()


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"amount": 5000}, {"type": "amount", "value": 5000}),
        (
            {"allocation": {"targets": [TARGET], "type": "amount", "value": 2500}},
            {"type": "amount", "value": 2500},
        ),
        (
            {"allocation": {"targets": [TARGET], "type": "percent", "value": 40}},
            {"type": "percent", "value": 40},
        ),
    ],
)
def test_preconfigured_amounts_are_stored(app, api, changes, expected):
    from console.extensions import db
    from console.link_tokens.models import LinkToken

    response = api.post("/link_tokens", json=body(**changes))
    assert response.status_code == 200, response.get_json()
    with app.app_context():
        row = db.session.get(LinkToken, uuid.UUID(response.get_json()["data"]["id"]))
        assert row.preconfigured_allocation == expected


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"amount": 0}, "amount"),
        ({"amount": "50.00"}, "amount"),
        ({"amount": 12.5}, "amount"),
        ({"allocation": {"targets": [TARGET], "type": "amount"}}, "allocation.value"),
        ({"allocation": {"targets": [TARGET], "type": "bonus", "value": 3}}, "allocation.type"),
        ({"allocation": {"targets": [TARGET], "type": "percent", "value": 101}}, "allocation.value"),
        ({"amount": 100, "allocation": {"targets": [TARGET], "type": "amount", "value": 200}}, "amount"),
    ],
)
def test_preconfigured_amount_rules(api, changes, field):
    expect_fields(api.post("/link_tokens", json=body(**changes)), field)


def test_the_specs_allocation_type_object_is_told_how_the_pair_is_sent(api):
    """The spec writes the pair as `allocation.type.amount` with `allocation.type.value`; sent literally, as an
    object, it got "must be one of amount, percent", which does not say where the number goes."""
    spec_literal = {"targets": [TARGET], "type": {"amount": 5000, "value": 5000}}
    response = api.post("/link_tokens", json=body(allocation=spec_literal))
    assert expect_fields(response, "allocation.type")["fields"][0]["message"] == (
        "must be a string, one of amount, percent, with the number in allocation.value beside it (the spec's "
        'allocation.type.amount and allocation.type.value: {"type": "amount", "value": 5000})'
    )
    bonus = {"targets": [TARGET], "type": "bonus", "value": 3}
    error = expect_fields(api.post("/link_tokens", json=body(allocation=bonus)), "allocation.type")
    assert error["fields"][0]["message"] == "must be one of amount, percent"


def test_disable_direct_deposit_splitting_is_stored(app, api):
    from console.extensions import db
    from console.link_tokens.models import LinkToken

    response = api.post("/link_tokens", json=body(disable_direct_deposit_splitting=True))
    with app.app_context():
        assert db.session.get(
            LinkToken, uuid.UUID(response.get_json()["data"]["id"])
        ).disable_direct_deposit_splitting
    expect_fields(
        api.post("/link_tokens", json=body(disable_direct_deposit_splitting="no")),
        "disable_direct_deposit_splitting",
    )


def test_expiry_is_scheduled_and_erases_matching_data(app, api, workspace):
    """An abandoned Prime token's personal data is gone once the clock passes its expiry."""
    from console.clock.moves import advance
    from console.extensions import db
    from console.link_tokens.models import LinkToken
    from console.workspaces.models import Workspace

    data = api.post("/link_tokens", json=with_matching()).get_json()["data"]
    with app.app_context():
        assert db.session.get(LinkToken, uuid.UUID(data["id"])).platform_matching is not None
        fired = advance(db.session.get(Workspace, uuid.UUID(workspace.id)), seconds=3601)
        assert "link_token.expire" in [f["kind"] for f in fired]
        db.session.expire_all()
        assert db.session.get(LinkToken, uuid.UUID(data["id"])).platform_matching is None
