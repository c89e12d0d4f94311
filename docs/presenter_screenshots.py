"""Take presenter-mode screenshots (docs/screenshots/presenter-*.png): each shipped story's key moment on a
1920x1080 projector (and the standard switch and the failure story at 1280x720 too), Link being filled in on
screen, and a profile's short link (its stage-picker).

    .venv/bin/python docs/presenter_screenshots.py

Serves the app with its worker on 127.0.0.1 (docs/screenshots.py `serve`), saves a profile for the prospect (its
logo drawn by the browser, uploaded on the profile's edit page), runs each story with the keyboard as a presenter
would (→ fills Link in on screen when a step completes it), and shoots the step named below (the moment the story
is about).
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs"))

from screenshots import CHROMIUM, OUT, serve, shrink  # noqa: E402

VIEWPORT = {"width": 1920, "height": 1080}
SMALL = {"width": 1280, "height": 720}  # the smallest projector the stage is made for
ALSO_SMALL = ("10-standard-switch", "50-failure-and-recovery")
LINK = "#phone-screen [data-link-overlay] iframe"
# Link is filled in this many times faster than a presenter's pace (the screenshots show where it ends).
SPEED = 5
# story key -> (the step to shoot, theme)
MOMENTS = {
    "10-standard-switch": (5, "light"),
    "20-platform-matching-one": (2, "dark"),
    "25-platform-matching-several": (2, "light"),
    "30-federal-benefits": (5, "light"),
    "40-on-demand-update": (8, "dark"),
    "50-failure-and-recovery": (8, "light"),
}
# The prospect's logo, drawn by the browser (no file to ship): a round badge with a compass star.
LOGO_SVG = """<!doctype html><html><body style="margin:0;background:transparent">
<svg xmlns="http://www.w3.org/2000/svg" width="128" height="128" viewBox="0 0 128 128">
  <circle cx="64" cy="64" r="64" fill="#1d4ed8"/>
  <circle cx="64" cy="64" r="50" fill="none" stroke="#fff" stroke-width="5"/>
  <path d="M64 22 L74 54 L106 64 L74 74 L64 106 L54 74 L22 64 L54 54 Z" fill="#fff"/>
  <circle cx="64" cy="64" r="8" fill="#1d4ed8"/>
</svg></body></html>"""


def profile_with_logo(browser, url: str) -> str:
    """Save the Northwind Lending profile with a logo; return its slug."""
    page = browser.new_context(viewport={"width": 400, "height": 400}).new_page()
    page.set_content(LOGO_SVG)
    logo = page.locator("svg").screenshot(omit_background=True)
    page.goto(f"{url}/present?brand=Northwind+Lending&color=%231d4ed8")
    page.get_by_label("Your name and email").fill("Sam Seller, sam@example.com")
    page.get_by_role("button", name="Save as a profile").click()
    slug = page.locator("#short-link").inner_text().rsplit("/", 1)[1]
    page.get_by_role("link", name="Add a logo, edit captions").click()
    page.get_by_label("Upload a logo").set_input_files(
        files=[{"name": "northwind.png", "mimeType": "image/png", "buffer": logo}]
    )
    page.get_by_role("button", name="Save the logo").click()
    page.get_by_text("Logo saved").wait_for()
    page.context.close()
    return slug


def link_listens(page) -> None:
    page.locator(f"{LINK}[data-stage-keys]").wait_for(timeout=20_000)


def shoot(page, name: str) -> None:
    page.screenshot(path=str(OUT / f"presenter-{name}.png"))
    shrink(OUT / f"presenter-{name}.png")
    print("wrote", f"presenter-{name}.png")


def story_moment(browser, url: str, slug: str, key: str, moment: int, theme: str) -> None:
    # A new browser context per story: a new session, so the first step makes a fresh workspace.
    page = browser.new_context(viewport=VIEWPORT).new_page()
    brand = f"profile={slug}" if theme == "light" else "brand=Northwind+Lending&color=%231d4ed8&theme=dark"
    page.goto(f"{url}/present/{key}?{brand}&speed={SPEED}")
    page.locator("html[data-stage-ready]").wait_for(state="attached")
    for step in range(1, moment + 1):
        if page.locator(LINK).count():
            link_listens(page)  # → fills Link in before the step runs
        page.keyboard.press("ArrowRight")
        page.locator(f'#stage[data-step="{step}"]').wait_for(timeout=60_000)
    page.wait_for_timeout(2500)  # Link's first screen, and the live panel's next poll
    # The controls and key hints are hidden by default, as the room sees the stage.
    shoot(page, key.split("-", 1)[1])
    if key in ALSO_SMALL:
        page.set_viewport_size(SMALL)
        page.wait_for_timeout(500)  # the phone is scaled to the new size
        shoot(page, key.split("-", 1)[1] + "-1280x720")
    page.context.close()


def link_typing(browser, url: str, slug: str) -> None:
    """The standard switch at a presenter's pace, caught while the stage types the password into Link."""
    page = browser.new_context(viewport=VIEWPORT).new_page()
    page.goto(f"{url}/present/10-standard-switch?profile={slug}")
    page.locator("html[data-stage-ready]").wait_for(state="attached")
    for step in (1, 2, 3):
        page.keyboard.press("ArrowRight")
        page.locator(f'#stage[data-step="{step}"]').wait_for(timeout=20_000)
    link_listens(page)
    page.keyboard.press("ArrowRight")
    password = page.frame_locator(LINK).locator("#password")
    page.wait_for_function(
        f"""() => {{ const f = document.querySelector('{LINK}');
                 const p = f && f.contentDocument.getElementById('password');
                 return p && p.value.length >= 5; }}""",
        timeout=30_000,
    )
    password.wait_for()
    shoot(page, "link-typing")
    page.context.close()


def picker(browser, url: str, slug: str) -> None:
    """The profile's short link, as the presenter opens it on the day of the call."""
    page = browser.new_context(viewport=SMALL).new_page()
    page.goto(f"{url}/p/{slug}")
    shoot(page, "picker")
    page.context.close()


def main() -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        url, stop, _app = serve(Path(tmp) / "presenter.db")
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            slug = profile_with_logo(browser, url)
            for key, (moment, theme) in MOMENTS.items():
                story_moment(browser, url, slug, key, moment, theme)
            link_typing(browser, url, slug)
            picker(browser, url, slug)
        finally:
            browser.close()
            stop()


if __name__ == "__main__":
    main()
