"""Job plans: which outcome a switch job starts with and how it resolves later.

A plan is named after the sandbox scenario that picks it (`job.scenario` holds that name); the
console's scenario gallery (`console.web.scenarios.gallery.Scenario`) is the other, user-facing side:
a row of test data that ends in one of these plans.

Pure data and decisions; `console.jobs.services` applies them (transitions, events, scheduling).
Sandbox test credentials pick any scenario; development and production jobs use `success` or a
federal one, chosen by the simulated world.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

SUCCESS, ERROR, PENDING, PROCESSING, SENT, FAILURE = (
    "success",
    "error",
    "pending",
    "processing",
    "sent",
    "failure",
)
OUTCOMES = (SUCCESS, ERROR, PENDING, PROCESSING, SENT, FAILURE)

# Spec, States and transitions: a pending job is retried for up to 24 hours after its first attempt.
RETRY_WINDOW = timedelta(hours=24)
# Federal benefits review takes one business day on the workspace clock.
FEDERAL_REVIEW_BUSINESS_DAYS = 1

RETRY_KIND = "job.retry"
FEDERAL_REVIEW_KIND = "job.federal_review"


@dataclass(frozen=True)
class JobPlan:
    name: str
    first_outcome: str
    first_reason: str
    # What a later retry or agency review turns the job into; None: retry until the window ends.
    resolves_to: str | None = None
    # Pending scenarios: time between attempts.
    retry_every: timedelta | None = None
    # Allowed outside the sandbox (the world decides; no test credential can pick a slow path).
    live: bool = False


PLANS: dict[str, JobPlan] = {
    s.name: s
    for s in (
        JobPlan("success", SUCCESS, "completed on first attempt", live=True),
        JobPlan("error", ERROR, "first attempt failed"),
        JobPlan(
            "pending_then_success",
            PENDING,
            "first attempt could not complete",
            resolves_to=SUCCESS,
            retry_every=timedelta(seconds=60),
        ),
        JobPlan(
            "pending_then_error",
            PENDING,
            "first attempt could not complete",
            resolves_to=ERROR,
            retry_every=timedelta(seconds=60),
        ),
        JobPlan(
            "pending_until_window_ends",
            PENDING,
            "first attempt could not complete",
            retry_every=timedelta(hours=1),
        ),
        JobPlan("federal_sent", PROCESSING, "submission accepted", resolves_to=SENT, live=True),
        JobPlan("federal_failure", PROCESSING, "submission accepted", resolves_to=FAILURE, live=True),
        JobPlan("federal_rejected", ERROR, "submission rejected", live=True),
    )
}

RETRY_REASONS = {SUCCESS: "retry succeeded", ERROR: "retry failed"}
REVIEW_REASONS = {SENT: "agency submission accepted", FAILURE: "agency submission failed"}
WINDOW_ENDED = "retry window ended"


def get_plan(name: str, mode: str) -> JobPlan:
    """The named scenario, refusing unknown names and sandbox-only ones in other modes."""
    scenario = PLANS.get(name)
    if scenario is None:
        raise ValueError(f"unknown switch scenario {name!r}")
    if mode != "sandbox" and not scenario.live:
        raise ValueError(f"scenario {name!r} exists only in the sandbox")
    return scenario


def retry_decision(
    scenario: JobPlan, attempt_at: datetime, first_attempt_at: datetime
) -> tuple[str, str] | None:
    """The (outcome, reason) a retry at `attempt_at` produces, or None when the job stays pending."""
    if scenario.resolves_to is not None:
        return scenario.resolves_to, RETRY_REASONS[scenario.resolves_to]
    if attempt_at >= first_attempt_at + RETRY_WINDOW:
        return ERROR, WINDOW_ENDED
    return None


def next_retry_at(scenario: JobPlan, attempt_at: datetime, first_attempt_at: datetime) -> datetime:
    """When the next attempt is due: one interval later, but never past the window's end."""
    assert scenario.retry_every is not None
    return min(attempt_at + scenario.retry_every, first_attempt_at + RETRY_WINDOW)
