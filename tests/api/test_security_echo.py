"""Error messages name what is wrong without echoing whatever the caller sent back whole."""

from __future__ import annotations

import pytest

from console.core.errors import MAX_SHOWN_NAME
from tests.conftest import assert_error

LONG = "9" * 6000


def test_an_unsupported_service_version_is_named_by_its_start_only(api):
    response = api.get("/jobs", headers={"Service-Version": LONG})
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "UNSUPPORTED_VERSION")
    assert error["message"].startswith("Unsupported Service-Version '" + "9" * 40 + "…'")
    assert len(response.get_data()) < 500


def test_a_short_unsupported_service_version_is_named_whole(api):
    error = assert_error(
        api.get("/jobs", headers={"Service-Version": "2020-01-01"}), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert "'2020-01-01'" in error["message"]


def test_an_unknown_query_parameters_long_name_is_cut(api):
    """The name was echoed whole, in the field and again in the message: a 6,000-character name, 12 KB."""
    response = api.get(f"/jobs?{'q' * 6000}=1")
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    (field,) = error["fields"]
    assert field["name"] == "q" * MAX_SHOWN_NAME + "…"
    assert "is not a parameter of this endpoint" in field["message"]
    assert len(response.get_data()) < 1000


def test_a_nul_in_a_long_parameter_name_is_named_cut_too(api):
    response = api.get(f"/jobs?link_token_id=x&{'n' * 6000}=%00")
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert [f["name"] for f in error["fields"]] == ["n" * MAX_SHOWN_NAME + "…"]


@pytest.mark.parametrize(
    "path",
    [
        "/jobs/{junk}",
        "/events/{junk}",
        "/accounts/{junk}",
        "/webhooks/{junk}",
        "/platforms/{junk}",
        "/employers/{junk}",
        "/sandbox/webhooks/{junk}/conformance",
    ],
)
def test_a_malformed_id_in_the_path_is_quoted_by_its_start_only(api, path):
    """A malformed id was quoted whole in the 404: a 60,000-character path came back in the message."""
    response = api.get(path.format(junk="a" * 20000))
    error = assert_error(response, 404, "RECORD_NOT_FOUND")
    assert "a" * 100 + "…" in error["message"] and "a" * 101 not in error["message"]
