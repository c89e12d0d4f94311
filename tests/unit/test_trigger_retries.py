"""`console trigger`'s calls retry as docs/api.md asks, with one Idempotency-Key per call across its tries."""

from __future__ import annotations

import json

import pytest
import requests

from console import trigger
from console.listener import Unavailable


def answer(status: int, body: dict, **headers: str) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response._content = json.dumps(body).encode()
    response.headers.update({"Content-Type": "application/json", **headers})
    return response


class Scripted:
    """A Service whose answers are scripted per call; records the Idempotency-Key of each try."""

    def __init__(self, *answers) -> None:
        self.answers = list(answers)
        self.keys: list[tuple[str, str | None]] = []

    def post(self, path, body=None, *, idempotency_key=None):
        self.keys.append((path, idempotency_key))
        item = self.answers.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


TOKEN = answer(200, {"data": {"id": "11111111-1111-4111-8111-111111111111"}})
DONE = answer(200, {"data": {"job_id": "j", "outcome": "success", "state": "success"}})
IN_USE = answer(
    409, {"error": {"code": "IDEMPOTENCY_KEY_IN_USE", "message": "still running"}}, **{"Retry-After": "1"}
)


def test_rate_limits_errors_and_a_try_still_running_are_retried_with_the_same_key():
    service = Scripted(
        Unavailable("rate limited; retry after 1 s", 1.0),
        TOKEN,
        Unavailable("cannot connect to http://x/sandbox/v1"),
        IN_USE,
        DONE,
    )
    slept: list[float] = []
    run = trigger.run_scenario(service, "success", sleep=slept.append)
    assert run.outcome == "success" and run.error is None
    assert slept == [1.0, 1, 1.0]  # the 429's Retry-After, backoff 2**0, the in-use answer's Retry-After
    token_keys = {key for path, key in service.keys if path == "/link_tokens"}
    complete_keys = {key for path, key in service.keys if path.endswith("/complete")}
    assert len(token_keys) == 1 and len(complete_keys) == 1 and token_keys != complete_keys
    assert None not in token_keys | complete_keys


def test_the_last_failure_is_raised_once_the_tries_are_used_up():
    service = Scripted(*[Unavailable("cannot connect to http://x/sandbox/v1")] * trigger.ATTEMPTS)
    slept: list[float] = []
    with pytest.raises(Unavailable, match="cannot connect to http://x"):
        trigger.run_scenario(service, "success", sleep=slept.append)
    assert slept == [1, 2, 4]


def test_an_in_use_answer_whose_retry_after_is_a_date_waits_a_second_instead_of_crashing():
    """Retry-After may be an HTTP date (a proxy's): the in-use retry parsed it with float() and the run died
    with a ValueError, where the 429 path (the listener's own parsing) already fell back to a second."""
    dated = answer(
        409,
        {"error": {"code": "IDEMPOTENCY_KEY_IN_USE", "message": "still running"}},
        **{"Retry-After": "Sat, 28 Nov 2026 22:00:00 GMT"},
    )
    slept: list[float] = []
    run = trigger.run_scenario(Scripted(TOKEN, dated, DONE), "success", sleep=slept.append)
    assert run.outcome == "success" and slept == [1.0]
