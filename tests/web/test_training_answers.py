"""Exercise 4's reason and grid word for endpoints that answer, but not as a receiver: what a class showed.

A trainee who registered the wrong path (a 404 to everything) was told on the grid "wrong key?" and on their
page to verify with their own sandbox key; a trainee whose exercise-2 file server still held the receiver's port
(`python3 -m http.server` answers every POST with 501) was told only "it answered 501 to every check".
"""

from __future__ import annotations

import functools
import re
import threading
from html import unescape
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.webhooks import Receiver
from console.requestlog.writer import writer_for
from console.training import snippets
from console.webhooks import WebhookVerificationError, verify
from tests.factories import LINK_TOKEN
from tests.web.conftest import Visitor
from tests.web.helpers import sandbox_secret
from tests.web.test_training import backend, check_now, create_cohort, join, register, result

# Fixtures of test_training.py, imported so pytest finds them here (the autouse rate limit too).
from tests.web.test_training import generous_rate_limit as generous_rate_limit
from tests.web.test_training import trainer as trainer


@pytest.fixture
def cohort(trainer):
    return create_cohort(trainer)


def _cell(grid: str) -> str:
    return re.search(r'<td data-exercise="conformance"[^>]*>\s*(.*?)</td>', grid, re.S).group(1)


@pytest.mark.committing
def test_an_endpoint_registered_at_a_path_with_no_route_is_told_to_fix_the_url_not_the_key(
    app, trainer, cohort
):
    """Its 404s pass the refusal checks (forged, altered, stale expect a 4xx), so the signed event's 404 read as a
    verification refusal: "wrong key?" on the grid, "verify with your own sandbox key" on the trainee's page."""
    trainee = join(app, cohort, "Radia")
    api = backend(app, trainee)
    with Receiver(lambda record: (404, b"<h1>Not Found</h1>")) as no_route:
        hook = register(api, no_route.url.rstrip("/") + "/webhook")
        assert check_now(app, api, hook["id"])["report"]["passed"] is False
    failed = result(app, trainee, "conformance")
    assert failed.label == "wrong URL?"
    assert "answered 404 (not found) to a correctly signed event" in failed.reason
    assert "register the path and port your receiver serves" in failed.reason
    assert "sandbox key" not in failed.reason
    grid = unescape(trainer.get(f"/training/{cohort['id']}").get_data(as_text=True))
    assert ">wrong URL?</a>" in _cell(grid)
    me = unescape(trainee.get("/training/me").get_data(as_text=True))
    assert "answered 404 (not found)" in me


@pytest.mark.committing
def test_a_wrong_key_is_still_called_a_wrong_key(app, cohort):
    trainee = join(app, cohort, "Margaret")
    api = backend(app, trainee)
    with Receiver(lambda record: (401, b"invalid signature")) as refuses:
        hook = register(api, refuses.url)
        check_now(app, api, hook["id"])
    failed = result(app, trainee, "conformance")
    assert failed.label == "wrong key?" and "verify with your own sandbox key" in failed.reason


@pytest.mark.committing
def test_a_file_server_on_the_receivers_port_is_named_as_the_cause(app, cohort, tmp_path):
    """The real `python3 -m http.server` (exercise 2's page server) where the receiver should be."""
    trainee = join(app, cohort, "Ken")
    api = backend(app, trainee)
    (tmp_path / "index.html").write_text("<button id=connect>Connect payroll</button>")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None
    files = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=files.serve_forever, daemon=True).start()
    try:
        hook = register(api, f"http://127.0.0.1:{files.server_address[1]}/hooks")
        check_now(app, api, hook["id"])
    finally:
        files.shutdown()
        files.server_close()
    failed = result(app, trainee, "conformance")
    assert failed.label == "HTTP 501"
    assert failed.reason.endswith(
        "it answered 501 to every check: 501 is how a static file server such as python3 -m http.server "
        "answers a POST, so that port serves files, not your receiver: stop it or move it to another port "
        "(the page's snippet uses 8080), then start your receiver there."
    )


def test_exercise_2s_page_is_served_on_another_port_than_the_receivers():
    """Both snippets said 8000: the page's file server, left running, took the port the listener forwards to."""
    facts = snippets.Facts(secret="sk_sandbox_x")
    shown = snippets.for_exercises("http://192.168.1.10:5000", facts)
    page = "\n".join(s.text + s.label for s in shown["link_sdk"])
    receiver = "\n".join(s.text + s.label for s in shown["own_endpoint"] + shown["conformance"])
    page_ports = set(re.findall(r"localhost:(\d+)|http\.server (\d+)", page))
    receiver_ports = set(re.findall(r"localhost:(\d+)/hooks|run -p (\d+)|listen\((\d+)\)", receiver))
    page_ports = {p for pair in page_ports for p in pair if p}
    receiver_ports = {p for group in receiver_ports for p in group if p}
    assert page_ports == {"8080"} and receiver_ports == {"8000"}


@pytest.mark.committing
def test_a_relayed_endpoints_reasons_read_as_sentences(app, cohort):
    """Through pcc.py listen a class read "Your endpoint your endpoint behind the listener (pcc.py listen) is
    registered …" and "your endpoint behind the listener (pcc.py listen) passed the conformance check."."""
    trainee = join(app, cohort, "Hedy")
    api = backend(app, trainee)
    assert api.post("/sandbox/listen", json={"version": "2023-11-22"}).status_code in (200, 201)
    registered = result(app, trainee, "own_endpoint").reason
    assert (
        registered
        == "Your endpoint behind the listener (pcc.py listen) is registered with version 2023-11-22."
    )
    direct = join(app, cohort, "Grace")
    hook = register(backend(app, direct), "http://127.0.0.1:9/hooks")
    assert result(app, direct, "own_endpoint").reason == (
        "Your endpoint http://127.0.0.1:9/hooks is registered with version 2023-11-22."
    )
    assert backend(app, direct).put(f"/webhooks/{hook['id']}", json={"status": "paused"}).status_code == 200
    assert result(app, direct, "own_endpoint").reason == (
        "Your endpoint http://127.0.0.1:9/hooks is paused: make it active (PUT status=active)."
    )


@pytest.mark.committing
def test_an_endpoint_that_redirects_every_delivery_is_told_deliveries_do_not_follow(app, cohort):
    """Flask's `@app.post("/hooks/")` answers a POST to /hooks with 308: the reason said only "it answered 308 to
    every check"."""
    trainee = join(app, cohort, "Linus")
    api = backend(app, trainee)
    with Receiver(lambda record: (308, b"", {"Location": "/hooks/"})) as slash:
        hook = register(api, slash.url.rstrip("/") + "/hooks")
        check_now(app, api, hook["id"])
    failed = result(app, trainee, "conformance")
    assert failed.label == "HTTP 308"
    assert "it answered 308 to every check: 308 is a redirect, and deliveries do not follow redirects" in (
        failed.reason
    )
    assert "a trailing slash, /hooks/, redirects /hooks" in failed.reason


@pytest.mark.committing
def test_a_link_token_request_the_api_refused_says_what_it_said(app, trainer, cohort):
    """A trainee whose backend sent a body without `allocation` read "No Link token yet: send POST
    /v1/link_tokens …", as one who never tried, and the grid showed the same quiet dot for both."""
    trainee = join(app, cohort, "Alan")
    api = backend(app, trainee)
    assert "No Link token yet" in result(app, trainee, "link_token").reason
    body = {"org_name": "Acme", "end_user_id": "user-1", "required_jobs": ["direct_deposit_switch"]}
    refused = api.post("/link_tokens", json=body)
    assert refused.status_code == 400
    writer_for(app).flush()  # the request log's background writer, as a poll a second later finds it
    failed = result(app, trainee, "link_token")
    assert failed.label == "HTTP 400", failed
    assert failed.reason == (
        "The API refused your backend's last POST /v1/link_tokens: 400 INVALID_FIELDS (allocation: is required). "
        "Fix what it names and send it again."
    )
    grid = unescape(trainer.get(f"/training/{cohort['id']}").get_data(as_text=True))
    cell = re.search(r'<td data-exercise="link_token"[^>]*>\s*(.*?)</td>', grid, re.S).group(1)
    assert ">HTTP 400</a>" in cell
    # Sent again, right: done, whatever came before.
    assert api.post("/link_tokens", json={**body, "allocation": LINK_TOKEN["allocation"]}).status_code == 200
    assert result(app, trainee, "link_token").done is True


def test_a_mistyped_join_link_says_how_to_get_it_right(app, cohort):
    """Typed from the projector, a join link's token is easy to get wrong (l and 1, O and 0): the page said only
    "This join link is not valid: ask your trainer for the current one"."""
    visitor = Visitor(app.test_client())
    path = "/" + cohort["join"].split("://", 1)[1].split("/", 1)[1]
    answer = visitor.get(path[:-1] + ("x" if path[-1] != "x" else "y"))
    assert answer.status_code == 404
    page = unescape(answer.get_data(as_text=True))
    assert "No class has this join link. Typed it from the screen?" in page
    assert "scan its QR code" in page


def test_once_a_webhook_is_held_the_button_says_pressing_again_replaces_it(app, cohort):
    """After the first press the page showed the same "Miss a webhook" button beside the held token: pressed
    again (nothing seemed to happen), it held back a new switch, and a lookup of the first token no longer
    counted."""
    trainee = join(app, cohort, "Whitfield")
    page = trainee.get("/training/me").get_data(as_text=True)
    assert ">Miss a webhook</button>" in page and "Miss another webhook" not in page
    assert trainee.post("/training/me/miss-webhook").status_code == 302
    page = unescape(trainee.get("/training/me").get_data(as_text=True))
    held = re.search(r"Held Link token: <code>([0-9a-f-]{36})</code>", page).group(1)
    assert ">Miss a webhook</button>" not in page
    assert ">Miss another webhook (replaces this token)</button>" in page
    assert held in result(app, trainee, "missed_webhook").reason


def test_the_trainees_page_opens_with_their_progress_and_the_next_exercise_and_its_poll_keeps_it(app, cohort):
    """On a phone the six statuses are screens apart: the page said nowhere how far the trainee was."""
    trainee = join(app, cohort, "Grace")
    page = unescape(trainee.get("/training/me").get_data(as_text=True))
    line = re.search(r'<p id="my-progress"[^>]*>(.*?)</p>', page, re.S).group(1)
    assert " ".join(re.sub(r"<[^>]+>", "", line).split()) == (
        "0 of 6 exercises done; next: Create a Link token from your own backend."
    )
    assert 'href="#exercise-link_token"' in line
    poll = re.search(r'hx-get="(/training/me/progress\?pulse=[0-9a-f]+)"', page).group(1)
    assert backend(app, trainee).post("/link_tokens", json=LINK_TOKEN).status_code == 200
    live = unescape(trainee.get(poll, htmx=True).get_data(as_text=True))
    line = re.search(r'<p id="my-progress"[^>]*hx-swap-oob="true"[^>]*>(.*?)</p>', live, re.S).group(1)
    assert "1 of 6 exercises done" in line and 'href="#exercise-link_sdk"' in line


def test_a_grid_opened_in_another_browser_says_how_to_open_it_there(app, trainer, cohort):
    """The grid's URL copied to the projector's browser answered "Nothing here, or it belongs to another
    workspace": a trainer has no workspace. Alike for a class that does not exist, so it tells a stranger nothing."""
    projector = Visitor(app.test_client())
    for path in (f"/training/{cohort['id']}", "/training/00000000-0000-0000-0000-000000000000"):
        answer = projector.get(path)
        assert answer.status_code == 404
        page = unescape(answer.get_data(as_text=True))
        assert "opened its trainer link" in page and "another workspace" not in page
    assert projector.get(f"/training/{cohort['id']}/grid").status_code == 404  # the poll: still a 404


def test_link_opened_from_a_page_opened_as_a_file_says_to_serve_the_page(app, trainer, cohort):
    """index.html double-clicked (file://): the SDK sends the page's origin, "null"; the browser refuses Link's
    frame there (a grey box), and exercise 2 said "not inside a page of yours (from the console, or its URL
    opened directly)", which the trainee had not done."""
    trainee = join(app, cohort, "Tim")
    api = backend(app, trainee)
    browser = app.test_client()
    token = api.post("/link_tokens", json=LINK_TOKEN).get_json()["data"]
    assert browser.get(f"/sandbox/link?token={token['token']}&origin=null").status_code == 200
    failed = result(app, trainee, "link_sdk")
    assert failed.done is False and failed.label == "file page"
    assert "opened as a file (file://…)" in failed.reason and "python3 -m http.server 8080" in failed.reason
    assert "not inside a page of yours" not in failed.reason
    grid = unescape(trainer.get(f"/training/{cohort['id']}").get_data(as_text=True))
    cell = re.search(r'<td data-exercise="link_sdk"[^>]*>\s*(.*?)</td>', grid, re.S).group(1)
    assert ">file page</a>" in cell
    # Served, the same token opened again from the page's real origin: done.
    assert (
        browser.get(f"/sandbox/link?token={token['token']}&origin=http://localhost:8080").status_code == 200
    )
    done = result(app, trainee, "link_sdk")
    assert done.done is True and "http://localhost:8080" in done.reason


@pytest.mark.committing
def test_a_receiver_that_falls_over_on_some_events_says_so(app, trainer, cohort):
    """It verified and deduplicated, then raised on the event types it did not expect: the grid said "failing"
    and the reason "a direct_deposit_switch.added event is accepted", with no word of its 500."""
    trainee = join(app, cohort, "Dennis")
    api = backend(app, trainee)
    secret = sandbox_secret(app, trainee.workspace_id)

    def only_accounts(record):
        try:
            body = verify(secret, record["headers"], record["body"])
        except WebhookVerificationError:
            return 400, b"bad signature"
        return (200, b"") if body["event"] == "account.added" else (500, b"KeyError: 'account'")

    with Receiver(only_accounts) as receiver:
        hook = register(api, receiver.url)
        check_now(app, api, hook["id"])
    failed = result(app, trainee, "conformance")
    assert failed.label == "HTTP 500"
    assert (
        "a direct_deposit_switch.added event is accepted (event:direct_deposit_switch.added: it answered 500)"
        in (failed.reason)
    )
