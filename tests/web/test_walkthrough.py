"""The walkthrough: every step is a real API call, and the checklist ticks itself from real data."""

from __future__ import annotations

import re
from html import unescape

from console.web.link import form as linkform
from tests.web.helpers import deliver_workspace_events, run_headless, sandbox_secret


def done_steps(html: str) -> list[str]:
    return re.findall(r'<li class="done[^"]*" data-step="([a-z_]+)"', html)


def link_token_form(preset: str = "standard") -> dict:
    values = linkform.form_values(linkform.preset_body(preset))
    form = {
        k: v for k, v in values.items() if k not in ("required_jobs", "pm_enabled") and v not in ("", None)
    }
    form["required_jobs"] = values["required_jobs"]
    if values["pm_enabled"]:
        form["pm_enabled"] = "1"
    return form


def test_a_new_workspace_has_its_key_and_webhook_ticked(visitor):
    page = visitor.get("/").get_data(as_text=True)
    assert done_steps(page) == ["key", "webhook"]
    assert 'aria-current="step"' in page
    # The base URL as the README and `console keys` name it (`$BASE/v1/link_tokens`), here and on the keys page.
    base = re.search(r"<dt>Base URL</dt>\s*<dd><code>([^<]+)</code>", page).group(1)
    assert base.endswith("/sandbox") and f"Base URL <code>{base}</code>" in visitor.get("/keys").get_data(
        as_text=True
    )


def test_creating_a_link_token_shows_the_exchange_and_ticks_step_3(app, visitor, rendered):
    response = visitor.post("/walkthrough/link-token", link_token_form(), htmx=True)
    html = response.get_data(as_text=True)
    assert rendered == [
        "console/walkthrough/_step_link_token.html",
        "console/walkthrough/_step_link.html",
        "console/walkthrough/_step_jobs.html",
        "console/walkthrough/_checklist.html",
    ]
    assert 'id="step-link" class="step card" hx-swap-oob="true"' in html
    assert "POST</span>" in html and "/sandbox/v1/link_tokens" in html
    assert re.search(r"x-service-request-id <code>[0-9a-f-]{36}</code>", html)
    assert "curl -X POST" in html and "requests.post(" in html
    # The secret is masked everywhere until revealed.
    secret = sandbox_secret(app, visitor.workspace_id)
    assert secret not in html
    assert "sk_sandbox_••••" + secret[-4:] in html
    assert "data-link-open" in html  # step 4 can now open Link with the token
    assert "link_token" in done_steps(visitor.get("/").get_data(as_text=True))


def test_the_api_judges_the_form_and_its_errors_are_shown(visitor):
    form = link_token_form()
    form["pm_enabled"] = "1"
    form["pm_email"] = "not-an-email"
    html = visitor.post("/walkthrough/link-token", form, htmx=True).get_data(as_text=True)
    assert 'status-4xx">400' in html
    assert "end_user.platform_matching.email" in html
    assert "link_token" not in done_steps(visitor.get("/").get_data(as_text=True))


def test_without_javascript_forms_post_and_redirect(visitor):
    response = visitor.post("/walkthrough/link-token", link_token_form())
    assert response.status_code == 302
    assert response.headers["Location"].endswith("/#step-link_token")


def test_code_made_from_a_logged_body_with_masked_values_says_so(visitor):
    """The log keeps the account number as its last four: the curl and Python made from it say to put the real
    value in (as pasted, the API refused them, `account_number must be 4 to 17 digits`, with nothing saying why)."""
    html = unescape(
        visitor.post("/walkthrough/link-token", link_token_form(), htmx=True).get_data(as_text=True)
    )
    assert '"account_number": "••••' in html or '"account_number":"••••' in html
    note = "# masked values (••••1234) are what the request log keeps, not what was sent: put real ones in"
    assert html.count(note) == 2  # curl and Python
    # An exchange with nothing masked has no note.
    jobs = unescape(
        visitor.post("/walkthrough/jobs", {"link_token_id": ""}, htmx=True).get_data(as_text=True)
    )
    assert "# masked values" not in jobs


def test_presets_fill_the_form(visitor, rendered):
    html = visitor.get("/walkthrough/link-token-form?preset=prime_several", htmx=True).get_data(as_text=True)
    assert rendered == ["console/walkthrough/_step_link_token.html"]
    assert 'value="Morgan"' in html and 'name="pm_enabled" value="1" checked' in html
    html = visitor.get("/walkthrough/link-token-form?preset=direct", htmx=True).get_data(as_text=True)
    assert re.search(r'<option value="[0-9a-f-]+" selected>Paycrest</option>', html)


def test_the_whole_walkthrough_ticks_every_step(app, client, visitor):
    link_token_id = run_headless(visitor, "user_good")  # steps 3 and 4: a token, and Link used with it
    assert done_steps(visitor.get("/").get_data(as_text=True)) == ["key", "webhook", "link_token", "link"]
    assert deliver_workspace_events(app, client, visitor.workspace_id) >= 2  # account.added + switch
    html = visitor.post("/walkthrough/jobs", {"link_token_id": link_token_id}, htmx=True).get_data(
        as_text=True
    )
    assert 'badge-success">success' in html
    assert f"/sandbox/v1/jobs?link_token_id={link_token_id}" in html
    # The job's timestamp reads as every other moment on the console does, not as the API's ISO string.
    table = html[html.index("<table") : html.index("</table>")]
    cell = re.search(r'<time datetime="([^"]+)">([^<]+)</time>', table)
    assert cell and "T" in cell.group(1)
    assert re.fullmatch(r"\w{3} \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2}", cell.group(2))
    page = visitor.get("/").get_data(as_text=True)
    assert done_steps(page) == ["key", "webhook", "link_token", "link", "inbox", "jobs"]
    assert "✓ signature verified" in page
    # What a screen reader hears as the last step ticks: it said "6 of 6 steps done; next, step 6: Query jobs".
    announced = re.search(r'data-announce="checklist">([^<]+)<', page).group(1)
    assert announced == "Walkthrough progress: 6 of 6 steps done: the walkthrough is complete.", announced


def test_step_6_says_what_was_queried_and_puts_a_refusal_on_its_field(visitor):
    link_token_id = run_headless(visitor, "user_good")
    # An emptied field: the API lists every job of the workspace; the step says so, and keeps the field empty
    # (it had put the newest token back, beside an answer that was not about that token).
    html = unescape(
        visitor.post("/walkthrough/jobs", {"link_token_id": ""}, htmx=True).get_data(as_text=True)
    )
    assert 'id="jobs-link-token-id" name="link_token_id" value=""' in html
    assert "Every job of the workspace: the query had no link_token_id." in re.sub(r"<[^>]+>", "", html)
    assert "See the timeline of this Link token" not in html
    # A value the API refuses: its message on the field, not only in the exchange's JSON.
    html = unescape(
        visitor.post("/walkthrough/jobs", {"link_token_id": "garbage"}, htmx=True).get_data(as_text=True)
    )
    assert 'value="garbage" size="38" aria-invalid="true" aria-describedby="jobs-link-token-id-error"' in html
    assert re.search(
        r'<p class="field-error" id="jobs-link-token-id-error">link_token_id must be a UUID</p>', html
    )
    # The token's own query: its jobs and the way to its timeline.
    html = visitor.post("/walkthrough/jobs", {"link_token_id": link_token_id}, htmx=True).get_data(
        as_text=True
    )
    assert "See the timeline of this Link token" in html and "field-error" not in html


def test_step_5_says_how_the_inbox_is_set_to_answer(visitor):
    def step_5() -> str:
        page = unescape(re.sub(r"\s+", " ", visitor.get("/").get_data(as_text=True)))
        return page[page.index('id="step-inbox"') : page.index('id="step-jobs"')]

    assert "inbox-behaviour-note" not in step_5()
    visitor.post("/inbox/behaviour", {"behaviour": "fail"})
    note = step_5()
    assert (
        "The inbox is set to <strong>answer 500 (every delivery fails and is retried)</strong>: each" in note
    )
    assert 'href="/webhooks#inbox">Change how it answers</a>' in note
    # A slow 200 is still a 200: neither page says deliveries are retried.
    visitor.post("/inbox/behaviour", {"behaviour": "slow"})
    assert "set to <strong>answer 200 ok after 3 s</strong>." in step_5() and "retried" not in step_5()
    webhooks = unescape(re.sub(r"\s+", " ", visitor.get("/webhooks").get_data(as_text=True)))
    assert "none is retried" in webhooks and "are retried (20 s" not in webhooks
    visitor.post("/inbox/behaviour", {"behaviour": "ok"})
    assert "inbox-behaviour-note" not in step_5()


def test_the_checklist_partial_polls_itself(visitor, rendered):
    html = visitor.get("/walkthrough/checklist", htmx=True).get_data(as_text=True)
    assert rendered == ["console/walkthrough/_checklist.html"]
    assert 'hx-trigger="every 3s, link-closed from:body"' in html
