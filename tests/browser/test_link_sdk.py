"""The Link SDK on a customer page served from another origin: screens, callbacks and their order."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from console.extensions import db
from console.world.seed_data import EMPLOYER_IDS, PLATFORM_IDS, SANDBOX_MATCH_IDENTITIES
from tests.browser.conftest import LINK_MATCHING_DELAY_MS
from tests.browser.linkui import SEARCH_LABEL, matching_held, search_and_choose
from tests.browser.waits import poll

expect = pytest.importorskip("playwright.sync_api").expect
EXAMPLE = Path(__file__).resolve().parents[2] / "static" / "examples" / "customer.html"
TARGET = {"type": "checking", "routing_number": "011000015", "account_number": "12345678"}
LINK_FRAME = "iframe[title^='Link']"


@pytest.fixture
def live(live_server):
    """The module's server, seen by this test as a customer with a workspace and sandbox key of its own."""
    live_server.app.config["LINK_MATCHING_DELAY_MS"] = LINK_MATCHING_DELAY_MS
    with live_server.app.app_context():
        from console.keys.services import create_key
        from console.workspaces.services import create_workspace

        workspace = create_workspace("Browser")
        secret = create_key(workspace.id, "sandbox", "browser").secret
        db.session.commit()
    return live_server.with_secret(secret)


@pytest.fixture
def customer(page, live):
    """The example customer page on its own server (another origin), loading the SDK from the service.

    A second loopback server rather than a routed fake host: Chromium's private-network rules block
    a "public" page from loading scripts from 127.0.0.1.
    """
    html = EXAMPLE.read_text().replace('src="/static/link.js"', f'src="{live.url}/static/link.js"').encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(html)))
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    page.customer_url = f"http://127.0.0.1:{server.server_address[1]}/customer.html"  # type: ignore[attr-defined]
    yield page
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def api(live, method: str, path: str, json=None) -> dict:
    headers = {"x-api-secret": live.secret, "Service-Version": "2023-11-22"}
    response = requests.request(method, live.api_url("sandbox", path), json=json, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def new_token(live, **changes) -> dict:
    body = {"org_name": "Acme", "end_user_id": "user-1", "required_jobs": ["direct_deposit_switch"],
            "allocation": {"targets": [TARGET]}}  # fmt: skip
    body.update(changes)
    return api(live, "POST", "/link_tokens", body)


def open_link(page, token: str):
    page.goto(f"{page.customer_url}?token={token}")
    page.click("#connect")
    frame = page.frame_locator(LINK_FRAME)
    frame.locator("#screen-title").wait_for()
    return frame


def calls(page) -> list:
    return page.evaluate("window.calls")


def callbacks(page) -> list[str]:
    """The specific callbacks, in order (onEvent is checked separately)."""
    return [c[0] for c in calls(page) if c[0] != "onEvent"]


def events(page) -> list[str]:
    return [c[1] for c in calls(page) if c[0] == "onEvent"]


def wait_for_callback(page, name: str, count: int = 1) -> None:
    page.wait_for_function("([n, k]) => window.calls.filter(c => c[0] === n).length >= k", arg=[name, count])


def login(frame, username: str, password: str = "pass_good") -> None:
    frame.get_by_label(re.compile("Username|Employee ID|Work email")).fill(username)
    frame.get_by_label("Password").fill(password)
    frame.get_by_role("button", name="Log in").click()


def allocate_and_confirm(frame, page) -> None:
    frame.get_by_role("button", name="Continue").click()
    frame.get_by_role("button", name="Confirm").click()
    wait_for_callback(page, "onSuccess")


def done(frame, page) -> None:
    frame.get_by_role("button", name="Done").click()
    wait_for_callback(page, "onExit")
    expect(page.locator(LINK_FRAME)).to_have_count(0)  # the SDK closed the modal


def test_standard_success(customer, live):
    token = new_token(live)
    frame = open_link(customer, token["token"])
    frame.get_by_role("button", name="Continue").click()
    # The search's results carry their colour (set through the CSSOM: Link's CSP allows no inline style).
    frame.get_by_label(SEARCH_LABEL).fill("Pay")
    swatch = frame.locator("#search-results .swatch").first
    poll(lambda: swatch.evaluate("e => getComputedStyle(e).backgroundColor"), lambda c: c != "rgba(0, 0, 0, 0)",
         what="a painted swatch")  # fmt: skip
    search_and_choose(frame, "Lumen", "Lumen Labs")
    login(frame, "user_good")
    frame.get_by_label("A fixed amount").check()
    frame.get_by_label("Amount per paycheck ($)").fill("75.50")
    allocate_and_confirm(frame, customer)
    done(frame, customer)
    assert callbacks(customer) == ["onLoginAttempt", "onLogin", "onSuccess", "onExit"]
    names = events(customer)
    assert names[:2] == ["open", "screen_transition"]
    order = [
        "select_employer",
        "select_platform",
        "login_attempt",
        "login",
        "input_allocation",
        "success",
        "exit",
    ]
    assert [n for n in names if n in order] == order
    payloads = {c[1]: c[2] for c in calls(customer) if c[0] == "onEvent"}
    assert payloads["input_allocation"]["allocation"]["value"] == 7550
    success = next(c[1] for c in calls(customer) if c[0] == "onSuccess")
    login_payload = next(c[1] for c in calls(customer) if c[0] == "onLogin")
    assert success["account_id"] == login_payload["account_id"] and success["job"]["outcome"] == "success"
    jobs = api(live, "GET", f"/jobs?link_token_id={token['id']}")
    assert [j["id"] for j in jobs] == [success["job"]["id"]]
    # Nothing broke, including the Link page's strict CSP (no inline script, no eval).
    assert not [m for m in customer.console_messages if m.startswith(("error", "pageerror"))], (
        customer.console_messages
    )


def test_mfa_wrong_code_then_right(customer, live):
    frame = open_link(
        customer, new_token(live, platform_id=str(PLATFORM_IDS["worknest"]), skip_intro_screen=True)["token"]
    )
    login(frame, "user_mfa_email")
    expect(frame.locator("#link-screen")).to_contain_text("u•••@example.com")
    frame.get_by_label("Verification code", exact=True).fill("000000")
    frame.get_by_role("button", name="Verify").click()
    frame.get_by_role("alert").wait_for()
    frame.get_by_label("Verification code", exact=True).fill("123456")
    frame.get_by_role("button", name="Verify").click()
    allocate_and_confirm(frame, customer)
    assert callbacks(customer) == ["onLoginAttempt", "onError", "onLogin", "onSuccess"]
    error = next(c[1] for c in calls(customer) if c[0] == "onError")
    assert error["code"] == "INVALID_MFA_CODE" and error["recoverable"] is True


def test_wrong_password_then_success(customer, live):
    frame = open_link(
        customer, new_token(live, platform_id=str(PLATFORM_IDS["paycrest"]), skip_intro_screen=True)["token"]
    )
    login(frame, "user_good", "wrong")
    expect(frame.get_by_role("alert")).to_contain_text("incorrect")
    login(frame, "user_good")
    allocate_and_confirm(frame, customer)
    assert callbacks(customer) == ["onLoginAttempt", "onError", "onLoginAttempt", "onLogin", "onSuccess"]
    attempts = [c[1]["attempt"] for c in calls(customer) if c[0] == "onLoginAttempt"]
    assert attempts == [1, 2]


def test_platform_matching_with_several_matches(customer, live):
    token = new_token(live, end_user={"platform_matching": SANDBOX_MATCH_IDENTITIES["several"]})
    with matching_held(customer) as release:  # the loading state stays until it has been seen
        frame = open_link(customer, token["token"])
        frame.get_by_role("button", name="Continue").click()
        frame.get_by_text("Finding your payroll account").wait_for()  # the visible loading state
        release()
    frame.get_by_text("We found 3 payroll accounts").wait_for()
    expect(frame.locator("button.choice")).to_have_count(3)
    frame.locator("button.choice", has_text="WorkNest").click()
    frame.get_by_label("Email").check()
    expect(frame.locator("#link-screen")).to_contain_text("m•••@example.com")  # the person's own, masked
    frame.get_by_role("button", name="Send code").click()
    frame.get_by_label("Verification code", exact=True).fill("123456")
    frame.get_by_role("button", name="Verify").click()
    allocate_and_confirm(frame, customer)
    assert callbacks(customer) == ["onLogin", "onSuccess"]
    selected = next(c[2] for c in calls(customer) if c[0] == "onEvent" and c[1] == "select_platform")
    assert selected["via"] == "matching" and selected["platform_name"] == "WorkNest"


def test_platform_matching_without_match_falls_back_to_search(customer, live):
    token = new_token(live, end_user={"platform_matching": SANDBOX_MATCH_IDENTITIES["none"]})
    frame = open_link(customer, token["token"])
    frame.get_by_role("button", name="Continue").click()
    frame.get_by_text("couldn't find your payroll account automatically").wait_for()
    search_and_choose(frame, "Paycrest", "Paycrest")
    login(frame, "user_good")
    allocate_and_confirm(frame, customer)
    assert callbacks(customer) == ["onLoginAttempt", "onLogin", "onSuccess"]


def test_direct_employer_routing_skips_search(customer, live):
    token = new_token(live, employer_id=str(EMPLOYER_IDS["copper-kettle"]), skip_intro_screen=True)
    frame = open_link(customer, token["token"])
    expect(frame.locator("#screen-title")).to_have_text("Log in to Ledgerline Payroll")
    login(frame, "user_good")
    allocate_and_confirm(frame, customer)
    names = events(customer)
    assert "select_employer" in names and names.index("select_platform") < names.index("login_attempt")
    transitions = [c[2]["to"] for c in calls(customer) if c[0] == "onEvent" and c[1] == "screen_transition"]
    assert "search" not in transitions and transitions[0] == "login"


def test_federal_benefits(customer, live):
    frame = open_link(customer, new_token(live, amount=5000)["token"])
    frame.get_by_role("button", name="Continue").click()
    search_and_choose(frame, "Social Security Ret", "Social Security Retirement")
    expect(frame.locator("#link-screen")).to_contain_text("can only be switched in full")
    expect(frame.locator("#link-screen")).to_contain_text("Checking ••••5678")
    frame.get_by_label("Legal first name").fill("Ada")
    frame.get_by_label("Legal last name").fill("Lovelace")
    frame.get_by_label("Social Security number").fill("900-00-0001")
    frame.get_by_role("button", name="Continue").click()
    expect(frame.locator("#link-screen")).to_contain_text("•••-••-0001")
    frame.get_by_role("button", name="Confirm").click()
    wait_for_callback(customer, "onSuccess")
    frame.get_by_text("was submitted").wait_for()
    success = next(c[1] for c in calls(customer) if c[0] == "onSuccess")
    assert success["job"]["outcome"] == "processing" and success["job"]["params"]["action"] == "full_switch"
    assert callbacks(customer) == ["onLoginAttempt", "onLogin", "onSuccess"]


def test_on_demand_update_skips_login(customer, live):
    first = new_token(live)
    body = {
        "platform_id": str(PLATFORM_IDS["paycrest"]),
        "credentials": {"username": "user_good", "password": "pass_good"},
    }
    account_id = api(live, "POST", f"/sandbox/link_tokens/{first['id']}/complete", body)["account_id"]
    frame = open_link(customer, new_token(live, account_id=account_id, skip_intro_screen=True)["token"])
    expect(frame.locator("#screen-title")).to_have_text("How much should go to Acme?")
    allocate_and_confirm(frame, customer)
    assert callbacks(customer) == ["onLogin", "onSuccess"]
    assert next(c[1] for c in calls(customer) if c[0] == "onLogin")["account_id"] == account_id


def test_invalid_token_and_foreign_messages(customer, live):
    frame = open_link(customer, "not-a-token")
    wait_for_callback(customer, "onError")
    # A message from any other origin or window is ignored by the SDK.
    customer.evaluate(
        "window.postMessage({source: 'payroll-link', type: 'event', name: 'success', payload: {}}, '*')"
    )
    frame.get_by_role("button", name="Close").last.click()
    wait_for_callback(customer, "onExit")
    assert callbacks(customer) == ["onError", "onExit"]
    assert next(c[1] for c in calls(customer) if c[0] == "onError")["code"] == "INVALID_LINK_TOKEN"


def test_standalone_link_page(page, live):
    token = new_token(live, platform_id=str(PLATFORM_IDS["paycrest"]), skip_intro_screen=True)
    response = page.goto(f"{live.url}/sandbox/link?token={token['token']}")
    assert "frame-ancestors" in response.headers["content-security-policy"]
    login(page, "user_good")
    page.get_by_role("button", name="Continue").click()
    page.get_by_role("button", name="Confirm").click()
    page.get_by_text("Your direct deposit was updated").wait_for()
    page.get_by_role("button", name="Done").click()
    page.get_by_text("You have left Link").wait_for()
    assert not [m for m in page.console_messages if m.startswith(("error", "pageerror"))]


def test_a_matched_accounts_employer_reads_in_words_in_a_phone_wide_link(browser, live):
    """The stage's phone is about 280 px wide: the match's employer sits under its platform, not squeezed beside it
    (it broke as 'Ligh / thouse / Outfitt / ers' beside 'Harbor Pay (Partnership)')."""
    token = new_token(live, end_user={"platform_matching": SANDBOX_MATCH_IDENTITIES["one"]})
    context = browser.new_context(viewport={"width": 280, "height": 600})
    try:
        page = context.new_page()
        page.goto(f"{live.url}/sandbox/link?token={token['token']}")
        page.get_by_role("button", name="Continue").click()
        page.get_by_text("We found your payroll account").wait_for()
        name = page.locator("button.choice .choice-name").first.bounding_box()
        detail = page.locator("button.choice .choice-detail").first
        box = detail.bounding_box()
        line = detail.evaluate("el => parseFloat(getComputedStyle(el).fontSize) * 1.5")  # a line, generously
        assert box["height"] < 1.5 * line, f"{detail.inner_text()!r} takes {box['height'] / line:.1f} lines"
        assert box["y"] >= name["y"] + name["height"] - 1  # under the platform's name
    finally:
        context.close()


def test_a_hand_built_link_url_with_a_bad_origin_says_so_inside_the_customer_s_frame(customer, live):
    """A page that frames Link itself with `origin=<its URL>/` (a trailing slash: no plain origin) saw Link run and
    never talk to it. Now the frame itself shows why, quoting the origin, in the customer page's own frame."""
    token = new_token(live)["token"]
    customer.goto(customer.customer_url)
    page_origin = customer.evaluate("location.origin")
    bad = page_origin + "/"
    src = f"{live.url}/sandbox/link?token={token}&origin={requests.utils.quote(bad, safe='')}"
    customer.evaluate(
        """src => { const f = document.createElement("iframe"); f.title = "Link (by hand)"; f.src = src;
                    f.width = 400; f.height = 600; document.body.appendChild(f); }""",
        src,
    )
    frame = customer.frame_locator("iframe[title='Link (by hand)']")
    expect(frame.locator("#screen-title")).to_have_text("Link cannot talk to this page")
    alert = frame.locator("[data-error-code='INVALID_ORIGIN']")
    expect(alert).to_contain_text(f"origin “{bad}”")
    expect(alert).to_contain_text("https://app.example.com or http://localhost:8000")
