"""Personal data masked in logged bodies; bodies with nothing personal kept as sent."""

from __future__ import annotations

import json

import pytest

from console.requestlog.redact import (
    ACCOUNT_FIELDS,
    CREDENTIAL_CONTAINERS,
    CREDENTIAL_FIELDS,
    MASK,
    PERSONAL_FIELDS,
    SECRET_FIELDS,
    redact_body,
    redact_pairs,
)

MATCHING = {
    "social_security_number": "123456789",
    "first_name": "Ada",
    "date_of_birth": "1990-05-17",
    "mobile_phone_number": "5551234567",
    "email": "ada@example.com",
}


def test_personal_fields_are_masked_and_the_rest_kept():
    body = {
        "end_user": {"platform_matching": MATCHING},
        "allocation": {"targets": [{"routing_number": "011000015", "account_number": "000123456789"}]},
        "id": "a1234567-89ab-4def-8123-456789012345",
    }
    redacted = json.loads(redact_body(json.dumps(body)))
    matching = redacted["end_user"]["platform_matching"]
    assert matching == {
        "social_security_number": MASK,
        "first_name": "Ada",
        "date_of_birth": MASK,
        "mobile_phone_number": MASK,
        "email": MASK,
    }
    assert redacted["allocation"]["targets"] == [
        {"routing_number": "011000015", "account_number": "••••6789"}
    ]
    assert redacted["id"] == body["id"]


def test_names_ending_in_a_personal_field_and_last_four_are_masked():
    redacted = json.loads(
        redact_body(json.dumps({"user_email": "a@b.co", "social_security_last_four": "6789"}))
    )
    assert redacted == {"user_email": MASK, "social_security_last_four": MASK}


def test_ssn_and_email_shapes_in_free_text_are_masked():
    text = json.dumps({"note": "ssn 123-45-6789, mail x.y@example.org, on 2024-01-15"})
    assert json.loads(redact_body(text)) == {"note": f"ssn {MASK}, mail {MASK}, on 2024-01-15"}


def test_a_body_cut_short_or_not_json_is_still_masked():
    cut = '{"end_user": {"email": "ada@example.com", "social_security_number": "1234567'
    redacted = redact_body(cut)
    assert "ada@example.com" not in redacted and "1234567" not in redacted
    assert redact_body("ssn=123-45-6789") == f"ssn={MASK}"


def test_nothing_personal_keeps_the_text_byte_for_byte():
    text = '{"org_name":  "Acme", "n": 1}'
    assert redact_body(text) == text
    assert redact_body("") == ""


def test_a_body_parsed_for_a_possible_field_but_with_nothing_to_mask_is_kept_byte_for_byte():
    # "email" and "phone" as words, a dash and an "@" in values, none of them personal data: the parsed
    # walk finds nothing to mask, so the text is kept with its own spacing and escapes, not re-encoded.
    text = '{"note":  "email or phone later",  "items": [{"a":  "x-1"}, ["@home", 2]], "\\u00e9": true}'
    assert redact_body(text) == text


def test_a_list_under_a_personal_name_masks_each_value_and_keeps_the_rest_of_the_body():
    body = {"phone": ["555-0100", "555-0199"], "kept": [1, "a", {"n": None}], "email_address": None}
    assert json.loads(redact_body(json.dumps(body))) == {
        "phone": [MASK, MASK],
        "kept": [1, "a", {"n": None}],
        "email_address": None,  # nothing to hide
    }


@pytest.mark.parametrize("field", PERSONAL_FIELDS + ACCOUNT_FIELDS)
def test_every_personal_field_name_alone_is_enough_to_be_masked(field):
    """No `@` and no SSN shape in the body: only the field's name can send it to be masked."""
    body = json.dumps({"data": {f"prefix_{field}": "x1234567", field: "x1234567"}, "other": "kept"})
    redacted = json.loads(redact_body(body))
    assert redacted["other"] == "kept"
    assert "x1234567" not in json.dumps(redacted)


def test_a_link_tokens_token_keeps_its_last_four_and_ids_named_after_it_are_kept():
    token = "pkfNFBHZSrpMTr3dlwzZckpFCYod8qyd-sTV5BpS18Y"
    link_token_id = "a1234567-89ab-4def-8123-456789012345"
    body = json.dumps({"data": {"id": link_token_id, "mode": "sandbox", "token": token}})
    assert json.loads(redact_body(body)) == {
        "data": {"id": link_token_id, "mode": "sandbox", "token": "••••S18Y"}
    }
    assert redact_body(body) == body.replace(token, "••••S18Y")  # nothing else personal: kept as sent
    # With personal data beside it, the parsed path masks both.
    both = json.dumps({"email": "ada@example.com", "data": {"token": token}, "note": 'a "token": "x"'})
    assert json.loads(redact_body(both)) == {
        "email": MASK,
        "data": {"token": "••••S18Y"},
        "note": 'a "token": "x"',
    }
    # A key named `token` inside a string value is text, not a field.
    quoted = json.dumps({"note": 'say "token": "abcdefgh"'})
    assert redact_body(quoted) == quoted
    jobs = json.dumps({"data": [{"link_token_id": link_token_id, "Token": "x1234567"}]})
    assert redact_body(jobs) == jobs  # only the exact name `token` is a credential


def test_a_link_token_in_a_body_cut_short_is_still_masked():
    cut = '{"data": {"id": "a1234567", "token": "pkfNFBHZSrpMTr3dlwzZckpFCYod8qyd-sTV5B'
    redacted = redact_body(cut)
    assert "pkfNFBHZ" not in redacted and '"id": "a1234567"' in redacted
    assert SECRET_FIELDS == ("token",)


@pytest.mark.parametrize(
    "field",
    # A bare `token` keeps its last four (above).
    ("password", "secret", "mfa_code", "Password", "MFA_CODE", *(f"api_{f}" for f in CREDENTIAL_FIELDS)),
)
def test_every_credential_field_is_masked_whole(field):
    """Masked whole, with nothing else in the body that would have sent it to be parsed."""
    body = json.dumps({"data": {field: "abcdefgh12"}, "other": "kept"})
    redacted = json.loads(redact_body(body))
    assert redacted == {"data": {field: MASK}, "other": "kept"}


@pytest.mark.parametrize("container", CREDENTIAL_CONTAINERS)
def test_everything_under_a_credential_container_is_masked(container):
    body = json.dumps(
        {container: {"username": "u1", "code": 918273, "nested": [{"x": "y"}], "none": None}, "id": "i"}
    )
    assert json.loads(redact_body(body)) == {
        container: {"username": MASK, "code": MASK, "nested": [{"x": MASK}], "none": None},
        "id": "i",
    }
    assert json.loads(redact_body(json.dumps({container: "user:pw"}))) == {container: MASK}


def test_names_that_only_look_like_credentials_are_kept():
    body = json.dumps(
        {
            "link_token_id": "a1234567",
            "mfa_methods": ["sms", "totp"],
            "mfa_enabled": True,
            "error": {"code": "INVALID_MFA_CODE", "fields": [{"name": "credentials.password"}]},
        }
    )
    assert redact_body(body) == body


def test_credentials_in_json_that_does_not_parse_are_masked():
    cut = '{"platform_id": "p", "credentials": {"username": "ada", "password": "s3cr}t\\"x'
    assert redact_body(cut) == f'{{"platform_id": "p", "credentials": "{MASK}"'
    trailing = '{"mfa": {"code": "918273"}, "api_secret": "zzz", "id": "kept",}'
    assert redact_body(trailing) == f'{{"mfa": "{MASK}", "api_secret": "{MASK}", "id": "kept",}}'


def test_credentials_in_name_value_pairs_are_masked():
    assert redact_pairs("a=1&password=pw&token=t&credentials[username]=u&mfa[code]=9&codes=1") == (
        f"a=1&password={MASK}&token={MASK}&credentials[username]={MASK}&mfa[code]={MASK}&codes=1"
    )
    assert redact_body("username=ada&password=pw") == f"username={MASK}&password={MASK}"


def test_an_api_secret_of_any_mode_is_masked_wherever_it_is_and_the_masked_forms_are_kept():
    from console.requestlog.redact import mask_api_secrets

    for prefix in ("sk_sandbox_", "sk_dev_", "sk_live_"):
        secret = prefix + "Ab3_-" * 8 + "wxyz"
        assert (
            redact_body('{"note": "mine is ' + secret + '"}') == '{"note": "mine is ' + prefix + '••••wxyz"}'
        )
        assert redact_body(f"key={secret}&x=1") == f"key={prefix}••••wxyz&x=1"
        assert mask_api_secrets(f"/v1/jobs/{secret}") == f"/v1/jobs/{prefix}••••wxyz"
    for kept in (
        "sk_sandbox_••••abcd",
        "sk_sandbox_…",
        "sk_sandbox_****abcd",
        "ask_sandbox_" + "a" * 40,
        "sk_test_" + "a" * 40,
    ):
        assert mask_api_secrets(kept) == kept
