"""The first hour: the README's curl (with the secret `make run` printed) and the browser meet in one
workspace once the browser opens that key's workspace; the secret never leaks into URLs or messages."""

from __future__ import annotations

import json
from html import unescape

from sqlalchemy import select

from console.bootstrap import demo_sandbox_secret
from console.extensions import db
from console.keys.services import secret_of
from console.requestlog.writer import writer_for
from console.web.shared.workspace_session import console_key
from console.workspaces.models import Workspace
from tests.factories import LINK_TOKEN
from tests.web.conftest import Visitor

# The README's first call sends the smallest valid body, the one every test uses.
README_BODY = LINK_TOKEN


def _readme_curl(client, secret: str) -> str:
    response = client.post(
        "/sandbox/v1/link_tokens",
        data=json.dumps(README_BODY),
        headers={"x-api-secret": secret, "Service-Version": "2023-11-22", "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()["data"]["id"]


def _demo_secret(app) -> str:
    with app.app_context():
        return demo_sandbox_secret()


def test_pasting_the_banner_secret_shows_the_readme_calls(app, client):
    secret = _demo_secret(app)
    token_id = _readme_curl(app.test_client(), secret)
    writer_for(app).flush()
    browser = Visitor(client)
    empty = browser.get("/requests").get_data(as_text=True)
    assert "No API call yet" in empty and "Open its workspace" in empty

    response = browser.post(
        "/workspace/open", {"secret": f"  {secret} "}, headers={"Referer": "http://localhost/requests"}
    )
    assert response.status_code == 302 and response.headers["Location"] == "/requests"
    assert secret not in response.headers["Location"]

    page = browser.get("/requests").get_data(as_text=True)
    assert "/sandbox/v1/link_tokens" in page and "No API call yet" not in page
    assert secret not in page  # the confirmation names the key by its last four characters only
    assert secret[-4:] in page and "named “Demo workspace”" in page  # quoted: not read as a description
    assert token_id in browser.get("/timeline").get_data(as_text=True)
    with app.app_context():
        demo = db.session.scalars(select(Workspace).where(Workspace.is_demo.is_(True))).one()
    assert browser.workspace_id == demo.id


def test_opening_changes_only_this_browser(app, client):
    secret = _demo_secret(app)
    other = Visitor(app.test_client()).start()
    before = other.workspace_id
    browser = Visitor(client)
    browser.get("/requests")
    browser.post("/workspace/open", {"secret": secret})
    assert other.workspace_id == before != browser.workspace_id


def test_a_workspace_opened_with_its_secret_outlives_this_browsers_reset(app, client):
    """Its owner's backend holds its keys: Reset here leaves it (as a kept one), it deleted it with its keys."""
    owner = Visitor(app.test_client()).start()
    with app.app_context():
        secret = secret_of(console_key(db.session.get(Workspace, owner.workspace_id)))
    browser = Visitor(client)
    browser.get("/requests")
    browser.post("/workspace/open", {"secret": secret})
    opened = browser.workspace_id
    assert opened == owner.workspace_id
    assert "This one was opened with its secret: it stays as it is for its owner" in browser.get(
        "/"
    ).get_data(as_text=True)
    assert browser.post("/workspace/reset").status_code in (302, 303)
    assert browser.workspace_id != opened
    with app.app_context():
        assert db.session.get(Workspace, opened) is not None
    headers = {"x-api-secret": secret, "Service-Version": "2023-11-22"}
    assert (
        app.test_client().get("/sandbox/v1/jobs", headers=headers).status_code == 200
    )  # its backend still calls


def test_a_wrong_or_revoked_secret_opens_nothing_and_is_not_repeated(app, client, visitor):
    mine = visitor.workspace_id
    assert "The workspace you are in now stays until it is idle for" in visitor.get("/timeline").get_data(
        as_text=True
    )
    guess = "sk_sandbox_" + "x" * 40
    response = visitor.post("/workspace/open", {"secret": guess}, follow_redirects=True)
    page = response.get_data(as_text=True)
    assert "No API key has this secret: check that you copied all of it." in page and guess not in page
    assert "No workspace opened" not in page  # it read "No workspace opened: No API key has …"
    assert visitor.workspace_id == mine
    assert "Paste an API secret" in visitor.post(
        "/workspace/open", {"secret": ""}, follow_redirects=True
    ).get_data(as_text=True)

    secret = _demo_secret(app)
    with app.app_context():
        from console.keys.models import ApiKey
        from console.keys.services import revoke_key

        key = db.session.scalars(select(ApiKey).where(ApiKey.secret_last4 == secret[-4:])).first()
        revoke_key(key)
        db.session.commit()
    page = visitor.post("/workspace/open", {"secret": secret}, follow_redirects=True).get_data(as_text=True)
    assert "revoked or rolled" in page and visitor.workspace_id == mine


def test_a_refused_secret_redraws_the_form_open_with_the_message_beside_the_field(app, visitor):
    """With htmx a refusal redraws only the form, open, the message next to the field it is about (the redirect
    closed the form and put "No workspace opened: No API key has this secret." at the top of the page); the
    secret is not written back. A secret that opens its workspace loads the page it was sent from anew."""
    mine = visitor.workspace_id
    guess = "sk_sandbox_" + "y" * 40
    response = visitor.post("/workspace/open", {"secret": guess, "open_id": "step"}, htmx=True)
    form = unescape(response.get_data(as_text=True))
    assert response.status_code == 200 and form.startswith(
        '<details class="open-workspace" id="open-workspace-step" open>'
    )
    assert 'aria-invalid="true"' in form and 'aria-describedby="open-error-step open-help-step"' in form
    assert (
        '<p id="open-error-step" class="field-error open-error" role="alert">No API key has this secret: check'
        in form
    )
    assert guess not in form and "No workspace opened" not in form and visitor.workspace_id == mine
    # A name no page uses draws the main form; the join page's form draws itself.
    odd = visitor.post("/workspace/open", {"secret": "", "open_id": '"><b>'}, htmx=True).get_data(
        as_text=True
    )
    assert 'id="open-workspace-main" open' in odd and "<b>" not in odd and "Paste an API secret" in odd
    rejoin = visitor.post("/workspace/open", {"secret": guess, "open_id": "rejoin"}, htmx=True).get_data(
        as_text=True
    )
    assert (
        rejoin.startswith('<details class="open-workspace" id="rejoin" open>')
        and 'id="rejoin-error"' in rejoin
    )

    secret = _demo_secret(app)
    opened = visitor.post(
        "/workspace/open", {"secret": secret}, htmx=True, headers={"Referer": "http://localhost/events"}
    )
    assert opened.status_code == 204 and opened.headers["HX-Redirect"] == "/events"
    assert visitor.workspace_id != mine


def _new_secret(app, workspace_id, mode: str) -> str:
    from console.keys.services import create_key

    with app.app_context():
        created = create_key(workspace_id, mode, f"{mode} key")
        db.session.commit()
        return created.secret


def test_a_weaker_modes_secret_does_not_open_a_workspace_holding_stronger_keys(app, client, visitor):
    """The console shows (reveals, rolls, revokes) every key of the workspace it opens: a sandbox secret, whose
    API access stops at sandbox, must not hand out the workspace's development or production secrets."""
    owner = visitor.workspace_id
    sandbox = _new_secret(app, owner, "sandbox")
    development = _new_secret(app, owner, "development")
    stranger = Visitor(app.test_client()).start()
    mine = stranger.workspace_id

    page = stranger.post("/workspace/open", {"secret": sandbox}, follow_redirects=True).get_data(as_text=True)
    assert "workspace also has development keys" in page and "active development keys to open it" in page
    assert sandbox not in page and stranger.workspace_id == mine != owner
    assert development not in stranger.get("/keys").get_data(as_text=True)

    production = _new_secret(app, owner, "production")
    page = stranger.post("/workspace/open", {"secret": development}, follow_redirects=True).get_data(
        as_text=True
    )
    assert "workspace also has production keys" in page and stranger.workspace_id == mine

    # A revoked production key still counts (its calls and data are in the workspace); the strongest mode's
    # active secret opens it.
    with app.app_context():
        from console.keys.models import ApiKey

        keys = db.session.scalars(
            select(ApiKey).where(ApiKey.workspace_id == owner, ApiKey.mode == "production")
        )
        for key in keys:
            key.revoked_at = key.created_at
        db.session.commit()
    page = stranger.post("/workspace/open", {"secret": development}, follow_redirects=True).get_data(
        as_text=True
    )
    assert "workspace also has production keys" in page and stranger.workspace_id == mine
    assert "revoked or rolled" in stranger.post(
        "/workspace/open", {"secret": production}, follow_redirects=True
    ).get_data(as_text=True)
    stranger.post("/workspace/open", {"secret": _new_secret(app, owner, "production")})
    assert stranger.workspace_id == owner


def test_opening_needs_the_csrf_token(app, client):
    secret = _demo_secret(app)
    browser = Visitor(client)
    browser.get("/requests")
    assert browser.post("/workspace/open", {"secret": secret}, csrf=False).status_code == 400


def test_opening_is_counted_by_the_per_address_limit(app, client):
    browser = Visitor(client)
    browser.get("/")
    limit = app.extensions["console_throttle"].creates_per_minute
    if not limit:
        return
    codes = {
        browser.post("/workspace/open", {"secret": "sk_sandbox_nope"}).status_code for _ in range(limit + 1)
    }
    assert 429 in codes


# --- the on-demand preset says which account, picks the right kind, and lets the person choose -------------


def _on_demand_page(visitor, account: str | None = None) -> str:
    import html as htmllib
    import re

    url = "/walkthrough/link-token-form?preset=on_demand" + (f"&account={account}" if account else "")
    return htmllib.unescape(re.sub(r"\s+", " ", visitor.get(url, htmx=True).get_data(as_text=True)))


def test_on_demand_after_a_federal_run_takes_the_payroll_account_and_offers_the_others(app, visitor):
    import re

    from tests.web.helpers import run_headless

    run_headless(visitor, "user_good")  # Paycrest, payroll
    run_headless(visitor, "federal_sent")  # Social Security Retirement, benefits: the newest
    page = _on_demand_page(visitor)
    assert "a benefits program, and an on-demand update refreshes payroll data" in page
    assert "your newest payroll account, on Paycrest" in page
    options = re.findall(r'<option value="([0-9a-f-]{36})"( selected)?>([^<]+)</option>', page)
    labels = {label: (ident, bool(selected)) for ident, selected, label in options}
    benefits = next(ident for label, (ident, _) in labels.items() if "(benefits)" in label)
    payroll = next(ident for label, (ident, sel) in labels.items() if "(payroll)" in label and sel)
    assert f'name="account_id" value="{payroll}"' in page or f'value="{payroll}"' in page

    chosen = _on_demand_page(visitor, benefits)
    assert "account_id is the account you chose, on Social Security Retirement" in chosen
    assert re.search(rf'<option value="{benefits}" selected>', chosen)


def test_on_demand_ignores_an_account_of_another_workspace(app, visitor, other_visitor):
    from console.accounts.models import Account
    from tests.web.helpers import run_headless

    run_headless(other_visitor, "user_good")
    run_headless(visitor, "user_good")
    with app.app_context():
        theirs = db.session.scalars(
            select(Account.id).where(Account.workspace_id == other_visitor.workspace_id)
        ).one()
    mine = _on_demand_page(visitor, str(theirs))
    assert str(theirs) not in mine
    assert "the account you chose" not in mine and "your newest connected account" in mine


# --- a token's page moves the workspace clock, and says so; its "next" is its own next item -----------------


def _timeline(visitor, token_id: str) -> str:
    import html as htmllib
    import re

    page = visitor.get(f"/timeline/link-tokens/{token_id}").get_data(as_text=True)
    return htmllib.unescape(re.sub(r"\s+", " ", page))


def test_a_tokens_next_is_its_own_and_a_move_names_what_ran_elsewhere(app, visitor):
    import html as htmllib
    import re

    from tests.web.helpers import run_headless

    mine = run_headless(visitor, "user_good")  # nothing of it due soon but its expiry
    other = run_headless(visitor, "user_pending_success")  # its retry, 60 s from now: the workspace's next
    page = _timeline(visitor, mine)
    assert (
        f"Next of this Link token: Link token {mine}" in page and other not in page.split("Next of")[1][:300]
    )
    assert "To this Link token's next item" in page
    assert (
        "The clock is the workspace's: a move here also runs whatever other tokens have due by then" in page
    )
    assert "1 item of other tokens scheduled" in page or "items of other tokens scheduled" in page

    form = {"by": "next_own", "timeline_kind": "link_token", "timeline_id": mine}
    moved = htmllib.unescape(
        re.sub(r"\s+", " ", visitor.post("/clock/advance", form, htmx=True).get_data(as_text=True))
    )
    assert "Clock advanced." in moved
    fired = re.findall(
        r"<li><time [^>]*>[^<]*</time> ([^<]*)(<span class=\"badge\">elsewhere in the workspace</span>)?",
        moved,
    )
    assert any(mine in summary and not elsewhere for summary, elsewhere in fired), fired
    assert any(other in summary or "retried" in summary for summary, elsewhere in fired if elsewhere), fired
    assert "elsewhere in the workspace, not this Link token's" in moved

    # On the other token's page, +1 business day lists what ran, each marked when it was not this token's.
    page = _timeline(visitor, other)
    assert "To this Link token's next item" in page


def test_the_clock_page_keeps_the_workspace_next(app, visitor):
    from tests.web.helpers import run_headless

    run_headless(visitor, "user_pending_success")
    page = visitor.get("/clock").get_data(as_text=True)
    assert "To the next scheduled item" in page and "The clock is the workspace's" not in page
