"""What exercise 4's reason says about a failed conformance report: the one thing to fix, read from the report.

The reports here have the shape of real runs against a trainee's endpoint (served by the console, seen in a
class): the checks' names, verdicts and each exchange's answer.
"""

from __future__ import annotations

from console.training.exercises import _failure_label, _why_failed

NAMES = (
    "signed_event",
    "forged_signature",
    "altered_body",
    "stale_timestamp",
    "duplicate_event",
    "event:account.added",
    "event:direct_deposit_switch.added",
    "event:direct_deposit_switch.added:without_action",
)


def _reason(status: int | None, error: str | None) -> str | None:
    """The reason code the sender records beside these words (console.conformance.sender.reason_of)."""
    if status is not None:
        return None
    return "timeout" if error and error.startswith("timeout") else "unreachable"


def report(answers: dict[str, tuple[bool, int | None, str | None]]) -> dict:
    checks = []
    for name, (passed, status, error) in answers.items():
        received = {"status": status, "error": error, "reason": _reason(status, error)}
        checks.append(
            {
                "name": name,
                "passed": passed,
                "received": received,
                "exchanges": [{"sent": {}, "received": received}],
            }
        )
    checks.append({"name": "unsubscribed_event_not_sent", "passed": True, "received": None, "exchanges": []})
    return {"passed": False, "checks": checks}


def test_an_endpoint_that_never_answers_in_time_is_said_to_time_out_once():
    """Each check waits out what is left of one shared deadline, so the reason read "no check passed (timeout:
    no complete answer within 15 s; timeout: no response within 14.9847 s; …)", one clause per check."""
    waits = ["no complete answer within 15 s", "no response within 14.9935 s", "no response within 14.9847 s"]
    answers = {name: (False, None, f"timeout: {waits[i % 3]}") for i, name in enumerate(NAMES)}
    assert _why_failed(report(answers)) == "no request got an answer (timeout: no answer within 15 s)"


def test_an_endpoint_that_refuses_correctly_signed_events_is_told_to_check_its_key():
    """Verifying with the wrong secret refuses everything with a 400: the refusal checks pass, and the reason
    was a list of check names ("signed_event, duplicate_event, event:account.added, …") that says nothing of why."""
    refusals = ("forged_signature", "altered_body", "stale_timestamp")
    answers = {name: (name in refusals, 400, None) for name in NAMES}
    reason = _why_failed(report(answers))
    assert reason.startswith("it answered 400 to a correctly signed event, so it refuses real deliveries too")
    assert "your own sandbox key" in reason and "event:account.added" not in reason


def test_an_endpoint_that_accepts_forgeries_is_told_what_must_hold_in_words():
    """The reason was the failed checks' names ("forged_signature, altered_body, stale_timestamp"): it now says
    what each requires, as the report's titles do, with the name to find it in the report."""
    accepted = ("forged_signature", "altered_body", "stale_timestamp")
    answers = {name: (name not in accepted, 200, None) for name in NAMES}
    titled = report(answers)
    titles = {
        "forged_signature": "A forged signature is refused with a 4xx",
        "altered_body": "A body altered after signing is refused with a 4xx",
        "stale_timestamp": "A timestamp older than 5 minutes is refused with a 4xx",
    }
    for check in titled["checks"]:
        check["title"] = titles.get(check["name"], "Something that passed")
    assert _why_failed(titled) == (
        "these must hold and did not: a forged signature is refused with a 4xx (forged_signature); a body "
        "altered after signing is refused with a 4xx (altered_body); a timestamp older than 5 minutes is "
        "refused with a 4xx (stale_timestamp)"
    )


def test_each_failure_has_a_word_for_the_grids_cell():
    """A projector shows 20 rows: the cell says what went wrong, where a grey dot only said "not done"."""
    refusals = ("forged_signature", "altered_body", "stale_timestamp")
    every = {
        "HTTP 500": dict.fromkeys(NAMES, (False, 500, None)),
        "timeout": dict.fromkeys(NAMES, (False, None, "timeout: no response within 14.98 s")),
        "down": dict.fromkeys(NAMES, (False, None, "connection failed: could not connect to the host")),
        "wrong key?": {name: (name in refusals, 400, None) for name in NAMES},
        "forged ok": {name: (name not in refusals, 200, None) for name in NAMES},
        "stale ok": {name: (name != "stale_timestamp", 200, None) for name in NAMES},
        "duplicates": {
            name: (name != "duplicate_event", 200 if name != "duplicate_event" else 500, None)
            for name in NAMES
        },
    }
    assert {label: _failure_label(report(answers)) for label, answers in every.items()} == {
        label: label for label in every
    }


def test_the_grids_word_comes_from_the_reason_code_not_the_errors_words():
    """The label re-read the error text ("timeout…" or not): a timeout worded otherwise (a listener's, the
    built-in inbox's) was labelled "down", and rewording an error would have changed the grid."""
    no_answer = report(dict.fromkeys(NAMES, (False, None, "the built-in inbox is busy")))
    for check in no_answer["checks"]:
        for exchange in check["exchanges"]:
            exchange["received"] = {**exchange["received"], "reason": "timeout"}
    assert _failure_label(no_answer) == "timeout"
    worded_like_a_timeout = report(dict.fromkeys(NAMES, (False, None, "timeout: whatever the words")))
    for check in worded_like_a_timeout["checks"]:
        for exchange in check["exchanges"]:
            exchange["received"] = {**exchange["received"], "reason": "unreachable"}
    assert _failure_label(worded_like_a_timeout) == "down"
    mixed = report(dict.fromkeys(NAMES, (False, None, "x")))
    mixed["checks"][0]["exchanges"][0]["received"] = {"status": None, "error": "x", "reason": "timeout"}
    assert _failure_label(mixed) == "no answer"


def test_a_report_kept_before_reason_codes_still_gets_a_word():
    old = report(dict.fromkeys(NAMES, (False, None, "connection failed: could not connect to the host")))
    for check in old["checks"]:
        for exchange in check["exchanges"]:
            exchange["received"].pop("reason", None)
    assert _failure_label(old) == "down"
