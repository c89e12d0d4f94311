"""`console trigger SCENARIO`: run a sandbox scenario through the API, from a terminal.

The scenarios are the console's gallery (console/web/scenarios/gallery.py: every row of the sandbox test
data), by the same keys, plus the job scenarios' names as aliases (`success`, `pending_then_error`,
`federal_sent`, ...). Each run creates a Link token and completes it headlessly
(`POST /v1/sandbox/link_tokens/{id}/complete`), so it makes the same account, job and events
(and webhook deliveries) a person going through Link would.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from requests import Response

from console.link.sandbox_data import sandbox_test_data
from console.listener import Fatal, Service, Unavailable, error_message, retry_after_seconds
from console.training.client import pcc
from console.web.scenarios.gallery import Scenario, all_scenarios, current_key


def aliases() -> dict[str, str]:
    """Job scenario name (and `mfa`) -> the gallery key whose run produces it."""
    data = sandbox_test_data()
    found: dict[str, str] = {"mfa": "user_mfa_sms"}
    for row in data["credentials"]:
        if row["scenario"] and not row["mfa_method"] and row["error_code"] is None:
            found.setdefault(row["scenario"], row["username"])
    return found


def resolve(name: str) -> Scenario:
    """The gallery scenario called `name` (a key or an alias); ValueError names the choices."""
    scenarios = {s.key: s for s in all_scenarios(with_steps=False)}
    key = current_key(aliases().get(name, name))
    if key not in scenarios:
        raise ValueError(f"unknown scenario {name!r}; `console trigger --list` shows them")
    return scenarios[key]


def table() -> dict[str, dict[str, Any]]:
    """Every scenario by key, in the gallery's order (grouped as the sandbox test data table is), with its
    group, description, aliases, token body and completion: what `--list` prints, and the table the training
    room's pcc.py is served with (console/web/training), so both clients list and run the same scenarios."""
    by_key: dict[str, list[str]] = {}
    for alias, key in aliases().items():
        by_key.setdefault(key, []).append(alias)
    return {
        scenario.key: {
            "group": scenario.group,
            "description": scenario.description,
            "aliases": by_key.get(scenario.key, []),
            "token_body": scenario.token_body(),
            "completion": scenario.completion,
        }
        for scenario in all_scenarios(with_steps=False)
    }


def listing() -> list[str]:
    """Lines for `--list`: each scenario with its aliases, by group. pcc.py formats them (it must stay
    standard-library only and print them itself), so `pcc.py trigger --list` prints the very same lines."""
    return pcc.listing(table())


@dataclass(frozen=True)
class Run:
    scenario: str
    link_token_id: str
    job_id: str | None
    outcome: str | None
    state: str | None
    error: str | None  # the Link error the flow stopped at (expected for the wrong-code scenarios)

    def describe(self) -> str:
        if self.error:
            return f"{self.scenario}: Link token {self.link_token_id} stopped with {self.error}"
        return (
            f"{self.scenario}: Link token {self.link_token_id}, job {self.job_id}, outcome {self.outcome}"
            f" (flow {self.state})"
        )


ATTEMPTS = 4  # per call: a 429 (another CI step on the same key), a 5xx or a refused connection is retried


def _post(service: Service, path: str, body: dict[str, Any], sleep: Callable[[float], None]) -> Response:
    """POST as docs/api.md says a client retries: after the `Retry-After` asked for (else backing off), with
    one `Idempotency-Key` for every try, so a retry never makes a second Link token or completion."""
    key = str(uuid.uuid4())
    for attempt in range(ATTEMPTS):
        try:
            response = service.post(path, body, idempotency_key=key)
        except Unavailable as exc:
            if attempt == ATTEMPTS - 1:
                raise
            sleep(exc.retry_after if exc.retry_after is not None else 2**attempt)
            continue
        # A try that timed out may still be running on the server: its key answers 409 IN_USE until it ends.
        if _code(response) != "IDEMPOTENCY_KEY_IN_USE" or attempt == ATTEMPTS - 1:
            return response
        wait = retry_after_seconds(response.headers.get("Retry-After"))
        sleep(wait if wait is not None else 1.0)
    raise AssertionError("unreachable")  # pragma: no cover


def _code(response: Response) -> str | None:
    try:
        return response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None


def run_scenario(service: Service, name: str, *, sleep: Callable[[float], None] = time.sleep) -> Run:
    """Create the scenario's Link token and complete it headlessly."""
    scenario = resolve(name)
    response = _post(service, "/link_tokens", scenario.token_body(), sleep)
    if response.status_code != 200:
        raise Fatal(f"creating the Link token failed: {error_message(response)}")
    token_id = response.json()["data"]["id"]
    response = _post(service, f"/sandbox/link_tokens/{token_id}/complete", scenario.completion, sleep)
    if response.status_code != 200:
        return Run(scenario.key, token_id, None, None, None, error_message(response))
    data: dict[str, Any] = response.json()["data"]
    return Run(scenario.key, token_id, data["job_id"], data["outcome"], data["state"], None)


__all__ = ["Fatal", "Run", "Unavailable", "aliases", "listing", "resolve", "run_scenario", "table"]
