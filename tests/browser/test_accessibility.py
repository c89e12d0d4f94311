"""Accessibility (WCAG 2.1 AA) in a real browser: axe-core over every console page and every Link screen,
no sideways scrolling at 390 px, Link as a modal dialog (focus trap, Escape, focus back to the opener), focus
after "Create Link token", and timeline links that say where they go.

axe-core is vendored (tests/browser/vendor/axe.min.js, from the npm registry); nothing is fetched at test
time. The console's CSP allows scripts from its own origin only, so the live server serves the scanner at a
same-origin path (`serve_test_file`) and it is added as `<script src>`: it runs under the page's real
policy, and the page fixture's CSP-violation check stays on. (Served by the server with a cache lifetime,
not by `page.route`: a routed page fetches and compiles its 650 KB again on every page, ~90 ms each.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from console.extensions import db
from console.world.seed_data import PLATFORM_IDS, SANDBOX_MATCH_IDENTITIES
from tests import images
from tests.browser.linkui import matching_held, search_and_choose
from tests.browser.test_console_walkthrough import LINK_FRAME, create_token, start

expect = pytest.importorskip("playwright.sync_api").expect
AXE = Path(__file__).parent / "vendor" / "axe.min.js"
AXE_PATH = "/__test__/axe.min.js"
TARGET = {"type": "checking", "routing_number": "011000015", "account_number": "12345678"}
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}

# Console GET routes that answer a fragment for htmx (scanned as part of the page that polls them).
FRAGMENTS = {
    "console.event_rows",
    "console.inbox_rows",
    "console.request_rows_live",
    "console.timeline_body",
    "console.checklist",
    "console.link_state",
    "console.link_token_form",
    "console.clock_scheduled",
    "console.conformance_poll",
    "console.present_backend",
    "console.training_grid_live",
    "console.training_me_live",
    # Not HTML: the trainer's CSV download, the room's single-file client (pcc.py), a presenter profile's logo.
    "console.training_export",
    "console.training_client",
    "console.profile_logo",
}


@pytest.fixture
def scanned(page, console_live):
    """The page, with axe-core served at a same-origin path (for the console and Link's frames alike)."""
    console_live.serve_test_file(AXE_PATH, AXE.read_bytes(), "text/javascript")
    return page


def axe_violations(target, url: str) -> list[str]:
    """Serious and critical axe-core violations on what `target` (a page or a frame) shows now."""
    if not target.evaluate("() => !!window.axe"):
        target.add_script_tag(url=url + AXE_PATH)
    found = target.evaluate(
        """async () => {
          const result = await axe.run(document, {
            iframes: false,
            runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]},
            resultTypes: ["violations"],
          });
          return result.violations
            .filter(v => v.impact === "serious" || v.impact === "critical")
            .map(v => v.id + " (" + v.impact + "): " + v.help + " at " +
                      v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", "));
        }"""
    )
    return found


def sideways(target) -> list[int]:
    """[scrollWidth, clientWidth] of the page when it scrolls sideways, else []."""
    size = target.evaluate(
        "() => [document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]"
    )
    return size if size[0] > size[1] else []


def widest(target) -> str:
    """The elements that stick out past the right edge while their parent does not (for the failure message)."""
    return target.evaluate(
        """() => { const w = document.scrollingElement.clientWidth, found = [];
          const clipped = el => { for (let a = el.parentElement; a; a = a.parentElement) {
            if (getComputedStyle(a).overflowX !== "visible") return true; } return false; };
          for (const el of document.body.querySelectorAll("*")) {
            const p = el.parentElement;
            if (el.getBoundingClientRect().right > w + 1 && p.getBoundingClientRect().right <= w + 1 && !clipped(el)
                || el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === "visible" && !clipped(el))
              found.push(el.tagName.toLowerCase() + "." + el.className + "#" + el.id + " in " +
                         p.tagName.toLowerCase() + "." + p.className);
          }
          if (!found.length) for (const el of document.body.querySelectorAll("*")) {
            const r = el.getBoundingClientRect();
            if (r.right > w + 1 && r.width > 0) found.push(el.tagName.toLowerCase() + "." + el.className + " (" +
                getComputedStyle(el).position + ", right " + Math.round(r.right) + ")");
          }
          return found.slice(0, 8).join("; "); }"""
    )


# Resolves at the second animation frame since the viewport is `width` wide: a frame's rendering steps (the
# resize event, so the Link SDK's own `fit`, and media queries) run before its animation-frame callbacks.
AT_WIDTH = """width => new Promise(resolve => {
  const frame = () => requestAnimationFrame(window.innerWidth === width ? () => resolve(true) : frame);
  requestAnimationFrame(frame);
})"""


def resize(page, size: dict) -> None:
    """Set the viewport and return once the page has been laid out and told (its resize handlers ran)."""
    page.set_viewport_size(size)
    page.evaluate(AT_WIDTH, size["width"])


def check(page, url: str, base: str, problems: list[str], what: str) -> None:
    """Scan what `page` shows at desktop width and again at 390 px, and look for sideways scrolling there."""
    page.set_viewport_size(DESKTOP)
    for violation in axe_violations(page, base):
        problems.append(f"{what} {url}: {violation}")
    resize(page, PHONE)
    # A phone's layout has problems of its own (a table that scrolls in its own box must take the focus).
    for violation in axe_violations(page, base):
        problems.append(f"{what} {url} at 390 px: {violation}")
    if sideways(page):
        problems.append(f"{what} {url}: scrolls sideways at 390 px {sideways(page)}: {widest(page)}")
    page.set_viewport_size(DESKTOP)


def hrefs(page, url: str, pattern: str) -> list[str]:
    page.goto(url)
    # Links, and the rows that load their details with htmx (events, requests).
    return page.locator("a[href], [hx-get]").evaluate_all(
        "(els, p) => els.map(e => e.getAttribute('href') || e.getAttribute('hx-get')).filter(h => new RegExp(p).test(h))",
        pattern,
    )


def fill_workspace(page, live) -> dict[str, str]:
    """A workspace with data on every page: the inbox webhook, a Link token, a finished switch with events,
    deliveries and a timeline. Returns a sample URL for each console route that takes an id."""
    page.goto(live.url + "/webhooks")
    page.get_by_role("button", name="Register the built-in inbox").click()
    page.get_by_role("link", name="Endpoint page").first.wait_for()
    start(page, live)
    token_id = create_token(page, "Standard switch")
    page.goto(live.url + "/scenarios")
    page.get_by_role("button", name="Run user_good headless").click()
    page.locator("#timeline").wait_for()
    account = page.locator("#timeline a[href^='/timeline/accounts/']").first.get_attribute("href")
    page.goto(live.url + "/webhooks")
    page.locator("#inbox-list .inbox-item").first.wait_for()

    def first(url: str, pattern: str) -> str:
        found = hrefs(page, live.url + url, pattern)
        assert found, f"no link matching {pattern} on {url}"
        return found[0]

    webhook = first("/webhooks", r"^/webhooks/[0-9a-f-]{36}$")
    training, presenter = _training_and_presenter(page, live)
    return {
        **training,
        **presenter,
        "console.event_detail": first("/events", r"^/events/[0-9a-f-]{36}$"),
        "console.debug_message": first("/webhooks", r"^/inbox/messages/[^/]+/debug"),
        "console.request_detail": first("/requests", r"^/requests/[^/?]+$"),
        "console.account_timeline": account,
        "console.link_token_timeline": f"/timeline/link-tokens/{token_id}",
        "console.webhook_endpoint": webhook,
        "console.conformance_report": webhook + "/conformance",
        "console.world_person": first("/world?tab=people", r"^/world/people/[^/?]+$"),
        "console.world_platform": first("/world", r"^/world/platforms/[^/?]+$"),
        "console.launch": f"/launch?link_token_id={token_id}",
    }


def _training_and_presenter(page, live) -> tuple[dict[str, str], dict[str, str]]:
    """A cohort with one trainee (this browser unlocked as its trainer), and a presenter story and profile."""
    from console.extensions import db
    from console.presenter import brand, profiles
    from console.presenter.stories import all_stories
    from console.training import cohorts
    from console.training.exercises import KEYS

    with live.app.app_context():
        cohort, secret = cohorts.create_cohort("Accessibility class", list(KEYS))
        member, _workspace, _again = cohorts.join(cohort, "Ada")
        story = all_stories()[0][0].key
        profile, edit_secret = profiles.create(brand.Brand("Acme Lending", "AL", "#1d4ed8", "light"), [story])
        profiles.set_logo(profile, images.png(32, 32))
        db.session.commit()
        ids = {"cohort": str(cohort.id), "member": str(member.id), "token": cohort.join_token}
        slug = profile.slug
    # A cohort created from the page: its "created" page shows the trainer link to this browser only.
    page.goto(live.url + "/training")
    page.get_by_label("Name").fill("Created class")
    page.get_by_role("button", name="Create class").click()
    page.locator("#trainer-link").wait_for()
    created = page.url.removeprefix(live.url)
    unlock = f"/training/{ids['cohort']}/trainer/{secret}"
    page.goto(live.url + unlock)  # the trainer's session may now open the grid
    # A profile saved from the page: its "saved" page shows the edit link to this browser only.
    page.goto(live.url + "/present")
    page.get_by_label("Company name").fill("Saved Lending")
    page.get_by_role("button", name="Save as a profile").click()
    page.locator("#edit-link").wait_for()
    saved = page.url.removeprefix(live.url)
    profile_unlock = f"/p/{slug}/edit/{edit_secret}"
    page.goto(live.url + profile_unlock)  # and the profile's edit page
    training = {
        "console.training_unlock": unlock,
        "console.training_created": created,
        "console.training_grid": f"/training/{ids['cohort']}",
        "console.training_trainee": f"/training/{ids['cohort']}/trainees/{ids['member']}",
        "console.training_join": f"/training/join/{ids['token']}",
    }
    presenter = {
        "console.present": f"/present?profile={slug}",  # with the profile's logo and its edit and delete
        "console.present_stage": f"/present/{story}?profile={slug}",
        "console.present_summary": f"/present/{story}/summary",
        "console.present_profile": f"/p/{slug}",
        "console.unlock_profile": profile_unlock,
        "console.edit_profile": f"/present/profiles/{slug}/edit",
        "console.profile_saved": saved,
    }
    return training, presenter


def console_pages(app, samples: dict[str, str]) -> list[str]:
    """Every console page: each GET route of the console, with a real id where it takes one."""
    pages, missing = [], []
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("console.") or "GET" not in rule.methods:
            continue
        if rule.endpoint in FRAGMENTS:
            continue
        if rule.endpoint in samples:
            pages.append(samples[rule.endpoint])
        elif rule.arguments:
            missing.append(f"{rule.endpoint} {rule.rule}")
        else:
            pages.append(rule.rule)
    assert not missing, f"console pages without a sample id (add them to fill_workspace): {missing}"
    return [*sorted(set(pages)), "/no-such-page"]


@pytest.mark.long
def test_every_console_page_passes_axe_and_fits_a_phone(scanned, console_live):
    page = scanned
    samples = fill_workspace(page, console_live)
    problems: list[str] = []
    for path in console_pages(console_live.app, samples):
        page.goto(console_live.url + path)
        page.wait_for_load_state("load")
        check(page, path, console_live.url, problems, "console")
    assert not problems, "\n".join(problems)


def test_the_checks_catch_what_they_look_for(scanned, console_live):
    """An image without a text alternative and a wide block are reported (the scans above can fail)."""
    page = scanned
    page.goto(console_live.url + "/keys")
    page.evaluate(
        """() => { const img = document.createElement("img"); img.src = "data:,"; img.width = 10;
                   const wide = document.createElement("div"); wide.style.width = "900px"; wide.textContent = "wide";
                   document.querySelector("main").append(img, wide); }"""
    )
    problems: list[str] = []
    check(page, "/keys", console_live.url, problems, "console")
    assert any("image-alt (critical)" in p for p in problems), problems
    assert any("scrolls sideways" in p for p in problems), problems


# Link, standalone in a full page (as a phone shows it) -------------------------------------------------


@pytest.fixture
def link_live(console_live):
    with console_live.app.app_context():
        from console.keys.services import create_key
        from console.workspaces.services import create_workspace

        workspace = create_workspace("A11y")
        secret = create_key(workspace.id, "sandbox", "a11y").secret
        db.session.commit()
    return console_live.with_secret(secret)


def new_token(live, **changes) -> str:
    import requests

    body = {"org_name": "Acme", "end_user_id": "user-1", "required_jobs": ["direct_deposit_switch"],
            "allocation": {"targets": [TARGET]}}  # fmt: skip
    body.update(changes)
    headers = {"x-api-secret": live.secret, "Service-Version": "2023-11-22"}
    response = requests.post(live.api_url("sandbox", "/link_tokens"), json=body, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["data"]["token"]


class LinkScreens:
    """Walks Link's screens in a page, checking each one it reaches."""

    def __init__(self, page, live):
        self.page, self.live, self.problems, self.seen = page, live, [], set()

    def open(self, token: str) -> None:
        self.page.goto(f"{self.live.url}/sandbox/link?token={token}")

    def screen(self, name: str) -> None:
        self.page.locator(f'#link-screen[data-screen="{name}"]').wait_for()
        self.here(name)

    def here(self, name: str) -> None:
        self.page.locator("#screen-title").wait_for()
        self.seen.add(name)
        check(self.page, name, self.live.url, self.problems, "Link screen")

    def login(self, username: str, password: str = "pass_good") -> None:
        self.page.get_by_label(re.compile("Username|Employee ID|Work email")).fill(username)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Log in").click()


def test_every_link_screen_passes_axe_and_fits_a_phone(scanned, link_live):
    link = LinkScreens(scanned, link_live)
    page = link.page

    # intro, search, login (with an error), allocation, confirm, success, exit
    link.open(new_token(link_live))
    link.screen("intro")
    page.get_by_role("button", name="Continue").click()
    link.screen("search")
    search_and_choose(page, "Lumen", "Lumen Labs")
    link.screen("login")
    link.login("user_good", "wrong")
    page.get_by_role("alert").wait_for()
    link.here("login with an error")
    link.login("user_good")
    link.screen("allocation")
    page.get_by_role("button", name="Continue").click()
    link.screen("confirm")
    page.get_by_role("button", name="Confirm").click()
    link.screen("success")
    page.get_by_role("button", name="Done").click()
    page.get_by_text("You have left Link").wait_for()
    link.here("exit")

    # MFA (method, then code)
    link.open(new_token(link_live, platform_id=str(PLATFORM_IDS["worknest"]), skip_intro_screen=True))
    link.login("user_mfa_email")
    page.get_by_role("button", name="Verify").wait_for()
    link.here("mfa")

    # a terminal error
    link.open(new_token(link_live, platform_id=str(PLATFORM_IDS["paycrest"]), skip_intro_screen=True))
    link.login("user_locked")
    page.get_by_role("alert").first.wait_for()
    link.here("error")

    # platform matching: the loading state (held there until it is checked), then the matches
    with matching_held(page) as release:
        link.open(new_token(link_live, end_user={"platform_matching": SANDBOX_MATCH_IDENTITIES["several"]}))
        page.get_by_role("button", name="Continue").click()
        page.get_by_text("Finding your payroll account").wait_for()
        link.here("matching")
        release()
    page.get_by_text("We found 3 payroll accounts").wait_for()
    link.here("matches")
    page.locator("button.choice", has_text="WorkNest").click()
    page.get_by_role("button", name="Send code").wait_for()
    link.here("mfa method")

    # federal benefits
    link.open(new_token(link_live, amount=5000))
    page.get_by_role("button", name="Continue").click()
    search_and_choose(page, "Social Security Ret", "Social Security Retirement")
    page.get_by_label("Social Security number").wait_for()
    link.here("federal")

    # an invalid token
    link.open("not-a-token")
    link.here("invalid token")

    # the Terms and Privacy pages the intro links to
    link.open(new_token(link_live))
    for name in ("Terms of Service", "Privacy Policy"):
        href = page.get_by_role("link", name=name).get_attribute("href")
        response = page.request.get(link_live.url + href)
        assert response.status == 200 and "sandbox" in response.text()
        page.goto(link_live.url + href)
        expect(page.get_by_role("heading", level=1)).to_have_text(name)
        link.here(name)
        link.open(new_token(link_live))

    assert not link.problems, "\n".join(link.problems)


def test_privacy_page_says_what_happens_to_data(page, link_live):
    page.goto(link_live.url + "/sandbox/link/privacy")
    text = page.locator("main").inner_text()
    for promise in (
        "test credentials",
        "simulated people",
        "deleted as soon as the flow",
        "stays on this server",
    ):
        assert promise in text.replace("\n", " "), promise
    page.goto(link_live.url + "/development/link/terms")
    assert "Development mode" in page.locator("main").inner_text()


# Link as a modal dialog in the console ------------------------------------------------------------------


def open_from_step_4(page, live):
    start(page, live)
    create_token(page, "Standard switch")
    opener = page.locator("#step-link").get_by_role("button", name="Open Link")
    opener.focus()
    page.keyboard.press("Enter")
    frame = page.frame_locator(LINK_FRAME)
    # Settled: Link focuses its first screen's heading a moment after the screen appears (htmx:afterSettle); a
    # test that moved the focus before then had it taken back (docs/testing.md, "Type once a screen has settled").
    expect(frame.locator("#screen-title")).to_be_focused()
    return frame


def focused_in_frame(frame) -> str:
    return frame.locator(":focus").evaluate("el => el.outerHTML.slice(0, 120)")


def test_link_is_a_modal_dialog_that_keeps_focus(page, console_live):
    frame = open_from_step_4(page, console_live)
    dialog = page.locator("[data-link-overlay]")
    expect(dialog).to_have_attribute("role", "dialog")
    expect(dialog).to_have_attribute("aria-modal", "true")
    expect(frame.locator("#screen-title")).to_be_focused()  # focus moved into Link

    # Tab all the way round: focus never leaves Link, and the close button is in the order.
    reached = []
    for _ in range(12):
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.tagName") == "IFRAME", "focus left Link"
        reached.append(focused_in_frame(frame))
    assert any('class="close"' in r for r in reached), reached
    assert any("Continue" in r for r in reached), reached
    # Tab from the last control comes back to the first (the close button), Shift+Tab goes back to the last.
    close = frame.get_by_role("button", name="Close Link")
    close.focus()
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.tagName") == "IFRAME"
    last = focused_in_frame(frame)
    assert 'class="close"' not in last
    page.keyboard.press("Tab")
    expect(close).to_be_focused()

    # Escape closes it like the close button (the flow ends, onExit fires) and focus returns to the opener.
    page.keyboard.press("Escape")
    page.locator(LINK_FRAME).wait_for(state="detached")
    expect(page.locator("#step-link [data-client-events] li[data-name='onExit']")).to_have_count(1)
    # The opener is redrawn as "Create a new token" (the token is used up): focus lands there, not on <body>.
    expect(page.locator("#step-link").get_by_role("button", name="Create a new token")).to_be_focused()


def test_escape_on_the_page_behind_link_closes_it(page, console_live):
    frame = open_from_step_4(page, console_live)
    page.locator("[data-link-focus-edge='end']").focus()  # focus on the customer page's side of the dialog
    expect(frame.get_by_role("button", name="Close Link")).to_be_focused()  # handed back into Link
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("Escape")
    page.locator(LINK_FRAME).wait_for(state="detached")
    expect(page.locator("#step-link [data-client-events] li[data-name='onExit']")).to_have_count(1)


def test_link_fills_a_phone_screen(page, console_live):
    """All of it below the walkthrough's strip of instructions (what to type stays in view above Link)."""
    page.set_viewport_size(PHONE)
    open_from_step_4(page, console_live)
    box = page.locator(LINK_FRAME).bounding_box()
    strip = page.locator("[data-link-guide].docked").bounding_box()
    assert strip["y"] == 0 and strip["height"] > 0
    assert (box["x"], box["y"], box["width"]) == (0, strip["height"], PHONE["width"])
    assert box["y"] + box["height"] == PHONE["height"]
    resize(page, DESKTOP)  # the SDK fits Link to the window on its resize event
    assert page.locator(LINK_FRAME).bounding_box()["width"] == 420


def test_focus_ring_contrast_is_at_least_3_to_1(page, console_live):
    """The focus outline colour against the page behind it, in the console and in Link."""
    contrast = """(el) => {
      const rgb = c => c.match(/[0-9.]+/g).slice(0, 3).map(Number);
      const lum = c => { const v = rgb(c).map(x => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
                         return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
      const ring = getComputedStyle(el).outlineColor;
      let bg = el.parentElement;
      while (bg && getComputedStyle(bg).backgroundColor.endsWith(", 0)")) bg = bg.parentElement;
      const back = bg ? getComputedStyle(bg).backgroundColor : "rgb(255, 255, 255)";
      const [a, b] = [lum(ring), lum(back)].sort((x, y) => y - x);
      return (a + 0.05) / (b + 0.05);
    }"""
    start(page, console_live)
    page.keyboard.press("Tab")  # the skip link, then the first control on the page
    page.keyboard.press("Tab")
    assert page.locator(":focus").evaluate(contrast) >= 3
    frame = open_from_step_4(page, console_live)
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert frame.locator(":focus").evaluate(contrast) >= 3


def test_focus_moves_to_step_4_after_create_link_token(page, console_live):
    start(page, console_live)
    page.get_by_role("button", name="Create Link token").click()
    page.locator("#step-link [data-link-open]").wait_for()
    expect(page.locator("#step-link-title")).to_be_focused()
    expect(page.locator("#announcer")).to_have_text(re.compile("Link token created"))


def test_timeline_event_links_say_where_they_go(page, console_live):
    page.goto(console_live.url + "/scenarios")
    page.get_by_role("button", name="Run user_good headless").click()
    page.locator("#timeline").wait_for()
    names = page.locator("#timeline a[href^='/events/']").evaluate_all(
        "links => links.map(a => a.textContent.replace(/\\s+/g, ' ').trim())"
    )
    assert names, "no event links on the timeline"
    assert "event" not in names  # each names its event, not just "event"
    assert all(re.search(r"[a-z_]+\.[a-z_]+", n) for n in names), names
