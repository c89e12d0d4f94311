"""GET /v1/jobs and GET /v1/jobs/{id}: the Job object, filters, pagination, scoping."""

from __future__ import annotations

import uuid

import pytest

from console.extensions import db
from console.workspaces.services import create_workspace
from tests.conftest import Api, assert_error
from tests.factories import new_switch

JOB_FIELDS = {"id", "account_id", "link_token_id", "name", "timestamp", "outcome", "params"}


@pytest.fixture
def jobs(app, workspace):
    """Three sandbox jobs (each on its own token and account) and one production job, by name."""
    with app.app_context():
        made = {
            "success": new_switch(workspace.id, "success"),
            "pending": new_switch(workspace.id, "pending_then_success", end_user_id="user-2"),
            "processing": new_switch(workspace.id, "federal_sent"),
            "production": new_switch(workspace.id, "success", mode="production"),
        }
        return {
            name: {"id": str(j.id), "link_token_id": str(j.link_token_id), "account_id": str(j.account_id)}
            for name, j in made.items()
        }


def test_list_returns_the_spec_job_objects_newest_first(api, jobs):
    response = api.get("/jobs")
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["meta"] == {"count": 3, "next_cursor": None}
    assert [j["id"] for j in body["data"]] == [jobs[n]["id"] for n in ("processing", "pending", "success")]
    for job in body["data"]:
        assert set(job) == JOB_FIELDS  # no end_user_id in the API object
        assert job["name"] == "direct_deposit_switch"
    assert body["data"][0]["outcome"] == "processing"
    assert body["data"][2]["params"]["action"] == "partial_switch"


@pytest.mark.parametrize(
    ("param", "source", "expected"),
    [
        ("link_token_id", "pending", ["pending"]),
        ("account_id", "success", ["success"]),
        ("outcome", None, ["processing"]),
        ("end_user_id", None, ["pending"]),
    ],
)
def test_filters(api, jobs, param, source, expected):
    value = {"outcome": "processing", "end_user_id": "user-2"}.get(param) or jobs[source][param]
    body = api.get(f"/jobs?{param}={value}").get_json()
    assert [j["id"] for j in body["data"]] == [jobs[n]["id"] for n in expected]


def test_filters_are_validated(api, jobs):
    error = assert_error(
        api.get("/jobs?link_token_id=nope&account_id=1&outcome=done"), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert {f["name"] for f in error["fields"]} == {"link_token_id", "account_id", "outcome"}


def test_pagination_walks_every_job_once(api, jobs):
    first = api.get("/jobs?limit=2").get_json()
    assert first["meta"]["count"] == 2 and first["meta"]["next_cursor"]
    second = api.get(f"/jobs?limit=2&cursor={first['meta']['next_cursor']}").get_json()
    ids = [j["id"] for j in first["data"] + second["data"]]
    assert len(ids) == len(set(ids)) == 3 and second["meta"]["next_cursor"] is None


def test_get_one_job(api, jobs):
    response = api.get(f"/jobs/{jobs['pending']['id']}")
    assert response.status_code == 200
    data = response.get_json()["data"]
    assert set(data) == JOB_FIELDS and data["outcome"] == "pending"


def test_jobs_are_scoped_to_mode_and_workspace(app, api, api_for, jobs):
    assert_error(api.get(f"/jobs/{jobs['production']['id']}"), 404, "RECORD_NOT_FOUND")
    production = api_for("production").get("/jobs").get_json()
    assert [j["id"] for j in production["data"]] == [jobs["production"]["id"]]
    with app.app_context():
        other = create_workspace("Other")
        db.session.commit()
        foreign = new_switch(other.id, "success")
        foreign_id = str(foreign.id)
    assert_error(api.get(f"/jobs/{foreign_id}"), 404, "RECORD_NOT_FOUND")
    assert foreign_id not in [j["id"] for j in api.get("/jobs").get_json()["data"]]


@pytest.mark.parametrize("job_id", [str(uuid.uuid4()), "not-a-uuid"], ids=["random-uuid", "not-a-uuid"])
def test_unknown_job_is_404(api, job_id):
    assert_error(api.get(f"/jobs/{job_id}"), 404, "RECORD_NOT_FOUND")


def test_params_without_action_have_no_allocation_type_or_value(app, api, workspace):
    params = {"allocation": {"type": "amount", "value": 100, "target": {"account_type": "checking"}}}
    with app.app_context():
        job_id = str(new_switch(workspace.id, "success", params=params).id)
    data = api.get(f"/jobs/{job_id}").get_json()["data"]
    assert data["params"] == {"allocation": {"target": {"account_type": "checking"}}}


def test_jobs_need_an_api_key(client, jobs):
    assert_error(Api(client, None).get("/jobs"), 401, "UNAUTHORIZED_REQUEST")
