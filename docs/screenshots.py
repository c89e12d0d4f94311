"""Take the console screenshots in docs/screenshots/ by walking through it as a new user would.

    .venv/bin/python docs/screenshots.py            # writes docs/screenshots/*.png
    .venv/bin/python docs/screenshots.py training   # only the training grid (training-grid.png)

It serves the whole app (with its in-process worker) on a free 127.0.0.1 port with a throwaway
SQLite database, drives Debian's Chromium with Playwright, and stops both when done.
"""

from __future__ import annotations

import logging
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from werkzeug.serving import make_server

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
VIEWPORT = {"width": 1440, "height": 900}


def serve(db_path: Path):
    """Start the app and its worker; return (url, stop, app)."""
    from console import create_app
    from console.extensions import db
    from console.worker import start_in_process
    from console.world.seed import seed_world
    from tests import loopback

    # This machine only, as in the suite: the training picture's PUBLIC_URL is a LAN address, and a webhook
    # made from it once sent the worker there.
    loopback.install()

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{db_path}",
            "SECRET_KEY": "screenshots-only",
            "PUBLIC_URL": url,
            "RATELIMIT_STORAGE_URI": "memory://",
            "LINK_MATCHING_DELAY_MS": 500,
        }
    )
    with app.app_context():
        db.create_all()
        seed_world(db.session)
        db.session.commit()
    worker = start_in_process(app)
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        worker.stop(timeout=5)

    return url, stop, app


def link_standard_switch(page, on_allocation=None) -> None:
    """Open Link from the walkthrough and complete a standard switch with the sandbox user_good."""
    page.get_by_role("button", name="Open Link").click()
    frame = page.frame_locator("iframe[title^='Link']")
    frame.get_by_role("button", name="Continue").click()
    frame.get_by_label(re.compile("Employer, payroll provider")).fill("Lumen")
    frame.locator("button.choice", has_text="Lumen Labs").click()
    frame.get_by_label(re.compile("Username")).fill("user_good")
    frame.get_by_label("Password").fill("pass_good")
    frame.get_by_role("button", name="Log in").click()
    frame.get_by_text("How much should go to").wait_for()
    if on_allocation:
        on_allocation()
    frame.get_by_role("button", name="Continue").click()
    frame.get_by_role("button", name="Confirm").click()
    frame.get_by_role("button", name="Done").click()


def shrink(path: Path) -> None:
    """Keep the committed pictures small: 256 colours without dithering (Pillow, when installed: text and flat
    colours stay sharp, about half the bytes), then Debian's `optipng` when on the PATH. Either is optional."""
    try:
        from PIL import Image
    except ImportError:
        pass
    else:
        with Image.open(path) as image:
            reduced = image.convert("RGB").quantize(256, Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        reduced.save(path, optimize=True)
    if shutil.which("optipng"):
        subprocess.run(["optipng", "-quiet", "-o2", "-strip", "all", str(path)], check=True)


def shoot(page, name: str, *, full_page: bool = True) -> None:
    page.screenshot(path=str(OUT / f"{name}.png"), full_page=full_page)
    shrink(OUT / f"{name}.png")
    print("wrote", OUT / f"{name}.png")


def training_grid(browser, url: str, app) -> None:
    """A class of 20 at different points of the exercises, on a 1280x720 projector, as a room sees it."""
    from tests.browser.classroom import seed_class

    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    page.goto(url + "/training")
    page.get_by_label("Name").fill("Payroll API, 24 Nov")
    page.get_by_role("button", name="Create class").click()
    join_link = page.locator("#join-link").inner_text()
    page.get_by_role("link", name="Open the grid").click()
    seed_class(app, join_link, url, check_endpoints=True)
    # The room's setup (docs/training.md): PUBLIC_URL is the trainer's laptop on the LAN.
    # Only for this picture: the inbox webhooks of the walkthrough below are made from PUBLIC_URL, and the
    # worker would deliver them to that address (unreachable here, and never to be called from a build).
    saved = {key: app.config.get(key) for key in ("PUBLIC_URL", "LISTEN_HOST")}
    app.config.update(PUBLIC_URL="http://192.168.1.10:5000", LISTEN_HOST="0.0.0.0")
    try:
        page.reload()
        page.locator("tr.stuck").first.wait_for()
        shoot(page, "training-grid", full_page=False)
    finally:
        app.config.update(saved)
    page.context.close()


def main(only: set[str]) -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        url, stop, app = serve(Path(tmp) / "screens.db")
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            if not only or "training" in only:
                training_grid(browser, url, app)
            if only and "console" not in only:
                return
            page = browser.new_context(viewport=VIEWPORT).new_page()
            page.goto(url + "/")
            shoot(page, "walkthrough-start", full_page=False)
            page.get_by_role("button", name="Create Link token").click()
            page.locator("#step-link_token .exchange").wait_for()
            page.locator("#step-link_token").scroll_into_view_if_needed()
            shoot(page, "walkthrough-link-token", full_page=False)
            page.locator("#step-link").scroll_into_view_if_needed()
            link_standard_switch(page, lambda: shoot(page, "walkthrough-link-open", full_page=False))
            page.locator("#inbox-list li").nth(1).wait_for()
            page.get_by_role("button", name="Query jobs").click()
            page.locator("#step-jobs .exchange").wait_for()
            page.locator('#checklist li.done[data-step="jobs"]').wait_for()
            page.locator("#step-link").scroll_into_view_if_needed()
            shoot(page, "walkthrough-link-and-inbox", full_page=False)
            page.goto(url + "/scenarios")
            page.get_by_role("button", name="Run user_pending_success headless").click()
            page.locator("#timeline").wait_for()
            shoot(page, "timeline-pending")
            page.get_by_role("button", name="+1 hour").click()
            page.get_by_text("Clock advanced.").wait_for()
            shoot(page, "timeline-after-clock")
            page.goto(url + "/events")
            page.locator(".event-row summary").first.click()
            page.locator(".event-detail .delivery").first.wait_for()
            shoot(page, "event-log")
            page.goto(url + "/webhooks")
            shoot(page, "webhooks-inbox-debugger")
            page.goto(url + "/requests")
            page.locator(".request-row summary").first.click()
            page.locator(".request-detail .exchange").wait_for()
            page.locator(".request-detail details").first.evaluate("d => d.open = true")
            shoot(page, "request-log")
            for name, path in (("scenarios", "/scenarios"), ("keys", "/keys"), ("world", "/world?tab=people"),
                               ("clock", "/clock"), ("api-reference", "/reference")):  # fmt: skip
                page.goto(url + path)
                shoot(page, name, full_page=False)
        finally:
            browser.close()
            stop()


if __name__ == "__main__":
    main(set(sys.argv[1:]))  # nothing: every picture; "training" or "console": those only
