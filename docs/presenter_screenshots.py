"""Take presenter-mode screenshots (docs/screenshots/presenter-*.png): each shipped story's key moment.

    .venv/bin/python docs/presenter_screenshots.py

Serves the app with its worker on 127.0.0.1 (docs/screenshots.py `serve`), runs each story with the keyboard as a
presenter would, and shoots the step named below (the moment the story is about).
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs"))

from screenshots import CHROMIUM, OUT, serve  # noqa: E402

VIEWPORT = {"width": 1440, "height": 960}
BRAND = "brand=Northwind+Lending&color=%231d4ed8"
# story key -> (the step to shoot, theme)
MOMENTS = {
    "10-standard-switch": (5, "light"),
    "20-platform-matching-one": (2, "dark"),
    "25-platform-matching-several": (2, "light"),
    "30-federal-benefits": (5, "light"),
    "40-on-demand-update": (8, "dark"),
    "50-failure-and-recovery": (8, "light"),
}


def main() -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        url, stop = serve(Path(tmp) / "presenter.db")
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            for key, (moment, theme) in MOMENTS.items():
                # A new browser context per story: a new session, so the first step makes a fresh workspace.
                page = browser.new_context(viewport=VIEWPORT).new_page()
                page.goto(f"{url}/present/{key}?{BRAND}&theme={theme}")
                page.locator("html[data-stage-ready]").wait_for(state="attached")
                for step in range(1, moment + 1):
                    page.keyboard.press("ArrowRight")
                    page.locator(f'#stage[data-step="{step}"]').wait_for(timeout=20_000)
                    if page.locator("[data-link-overlay]").count() and step < moment:
                        page.evaluate("window.Link.close()")
                page.wait_for_timeout(1500)  # the live panel's next poll
                page.locator("#stage").focus()  # Link may hold the focus; h is the stage's key
                page.keyboard.press("h")  # controls hidden, as while presenting
                page.screenshot(path=str(OUT / f"presenter-{key.split('-', 1)[1]}.png"))
                print("wrote", f"presenter-{key.split('-', 1)[1]}.png")
                page.context.close()
        finally:
            browser.close()
            stop()


if __name__ == "__main__":
    main()
