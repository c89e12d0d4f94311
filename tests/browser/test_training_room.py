"""The trainer's grid on a projector (issue 32, "The room"): a 20-trainee class at 1280x720 fits the screen
beside the join link's QR code, and stays readable in a screenshot shrunk to half (640x360): exercise names
in the headers, done cells in a success colour, pending ones quiet, a stuck trainee highlighted.
"""

from __future__ import annotations

import base64

from tests.browser.classroom import join, open_new_class, seed_class
from tests.browser.conftest import BACKSTOP_MS

PROJECTOR = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}


def test_a_twenty_trainee_grid_is_readable_at_half_size_on_a_projector(browser, live_server, tmp_path):
    context = browser.new_context(viewport=PROJECTOR)
    context.set_default_timeout(BACKSTOP_MS)
    try:
        page = context.new_page()
        join_link = open_new_class(page, live_server.url, "Payroll API, 24 Nov")
        names = seed_class(live_server.app, join_link, live_server.url)
        page.locator(f'tr[data-trainee="{names[-1]}"]').wait_for()
        # The room's setup (docs/training.md): PUBLIC_URL names the trainer's laptop on the LAN, so the grid
        # shows that join link and no loopback warning (the test's server itself listens on 127.0.0.1).
        live_server.app.config["PUBLIC_URL"] = "http://192.168.1.10:5000"
        live_server.app.config["LISTEN_HOST"] = "0.0.0.0"
        page.reload()
        assert page.locator("#loopback-warning").count() == 0
        assert page.locator("#join-link").inner_text().startswith("http://192.168.1.10:5000/training/join/")
        page.locator(
            'tr[data-trainee="Barbara Liskov"] td[data-exercise="switch_outcomes"][data-done="yes"]'
        ).wait_for()

        assert page.get_by_text("No workspace yet").count() == 0
        heads = page.locator("th.exercise-head .exercise-name").all_inner_texts()
        assert heads == ["Link token", "Link from your page", "Your endpoint", "Conformance", "Missed webhook",
                         "Pending & federal"]  # fmt: skip
        progress = page.locator("#class-progress").inner_text()
        assert "20 trainees" in progress and "4 quiet for 10+ min" in progress, progress
        assert page.locator("tr.stuck").count() == 4
        # Everything a trainer points at is on the screen: every row, the last column, the QR code and the link.
        for box in (
            page.locator(f'tr[data-trainee="{names[-1]}"]').bounding_box(),
            page.locator("td.last-activity").last.bounding_box(),
            page.locator(".join-qr svg").bounding_box(),
            page.locator("#join-link").bounding_box(),
        ):
            assert (
                box["y"] + box["height"] <= PROJECTOR["height"]
                and box["x"] + box["width"] <= PROJECTOR["width"]
            )
        assert page.evaluate("document.documentElement.scrollWidth") <= PROJECTOR["width"]
        # Each "Last API call" in its column, not spilling out of it ("joined 12 min ago" is the longest).
        spilled = page.locator("td.last-activity").evaluate_all(
            "cells => cells.filter(c => c.scrollWidth > c.clientWidth).map(c => c.innerText)"
        )
        assert spilled == [], spilled
        # Done cells in a success colour with white text, pending ones quiet (no blue, no underline).
        done = page.locator('td[data-done="yes"]').first
        assert done.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(26, 127, 55)"
        pending = page.locator('td[data-done="no"] a').first
        style = pending.evaluate("e => [getComputedStyle(e).color, getComputedStyle(e).textDecorationLine]")
        assert style == ["rgb(87, 96, 106)", "none"]
        # Half size: a row is still 12 px or more tall, a name 8 px or more.
        row = page.locator(f'tr[data-trainee="{names[0]}"]').bounding_box()
        name_size = page.locator(f'tr[data-trainee="{names[0]}"] th').evaluate(
            "e => parseFloat(getComputedStyle(e).fontSize)"
        )
        assert row["height"] >= 24 and name_size >= 16, (row, name_size)
        # The whole grid fits the projector: no "swipe sideways" line for the room to read.
        assert not page.locator(".scroll-hint").is_visible()
        # The QR code is big enough to scan from the room: 180 px or more on the screen.
        assert page.locator(".join-qr svg").bounding_box()["width"] >= 180

        shot = tmp_path / "grid.png"
        page.screenshot(path=str(shot))
        half = context.new_page()
        half.set_viewport_size({"width": 640, "height": 360})
        data = base64.b64encode(shot.read_bytes()).decode()
        half.set_content(
            f'<body style="margin:0"><img src="data:image/png;base64,{data}" width="640" height="360"></body>'
        )
        half.screenshot(path=str(tmp_path / "grid-half.png"))
        page.screenshot(path=str(tmp_path / "grid-full.png"))
        print("screenshots:", shot, tmp_path / "grid-half.png")
    finally:
        context.close()


def test_a_long_name_leaves_the_exercises_on_a_phone(browser, live_server):
    """At 390 px the grid scrolls in its own box: a long name is cut (and read whole in its title) so the
    first exercises stay beside it, instead of a 700 px name column."""
    context = browser.new_context(viewport=PHONE)
    context.set_default_timeout(BACKSTOP_MS)
    try:
        page = context.new_page()
        join_link = open_new_class(page, live_server.url, "Phone class")
        name = "Jean-Baptiste Lemaire-Fontaine de la Tour d'Auvergne"
        join(join_link, name)
        row = page.locator(f'tr[data-trainee="{name}"]')
        row.wait_for()
        cell = row.locator("th").bounding_box()
        first = row.locator("td[data-exercise]").first.bounding_box()
        assert cell["width"] <= 170, cell  # 8.5rem and its padding
        assert first["x"] + first["width"] <= PHONE["width"], first
        assert row.locator("th a").get_attribute("title") == name
        # The grid's right-hand columns start out of sight: the phone says the table scrolls.
        table = page.locator("table.room-grid")
        assert table.evaluate("t => t.scrollWidth > t.clientWidth")
        assert page.locator(".scroll-hint").is_visible()
    finally:
        context.close()


# Every word a pending cell can say (console.training.exercises: each check's Result label, and the
# conformance check's _failure_label), the longest first.
CELL_WORDS = ("console only", "old version", "wrong URL?", "wrong key?", "duplicates", "no answer", "running…",
              "forged ok", "stale ok", "HTTP 500", "disabled", "file page", "failing", "timeout", "to find", "no page",
              "paused", "down")  # fmt: skip


def test_every_cell_word_and_an_hour_old_stuck_join_fit_a_projectors_grid(browser, live_server):
    """At 1280 px "wrong key?" read "wrong k…" and "console only" "console o…"; and a trainee stuck since joining
    an hour ago read "joined 1 h 12 min ago", bold, over the row's Remove button."""
    from datetime import timedelta

    from sqlalchemy import select, update

    from console.extensions import db
    from console.training.models import CohortMember

    context = browser.new_context(viewport=PROJECTOR)
    context.set_default_timeout(BACKSTOP_MS)
    try:
        page = context.new_page()
        join_link = open_new_class(page, live_server.url, "Hour class")
        join(join_link, "Idle Isaac")
        with live_server.app.app_context():
            member = db.session.scalars(select(CohortMember).where(CohortMember.name == "Idle Isaac")).one()
            hour_ago = member.joined_at - timedelta(minutes=72)
            db.session.execute(
                update(CohortMember).where(CohortMember.id == member.id).values(joined_at=hour_ago)
            )
            db.session.commit()
        page.reload()
        row = page.locator('tr[data-trainee="Idle Isaac"]')
        assert row.get_attribute("data-stuck") == "yes"
        last = row.locator("td.last-activity time")
        remove = row.locator("td.remove-cell button").bounding_box()
        text = last.bounding_box()
        assert text["x"] + text["width"] <= remove["x"], (last.inner_text(), text, remove)
        assert last.inner_text() == "joined 1 h ago"  # whole hours past the first
        # Each word in a pending cell of the conformance column, as the grid draws a failure (the poll is
        # stopped first, so no redraw puts the cell back meanwhile).
        cut = page.evaluate(
            """words => {
              document.querySelector("#training-grid").removeAttribute("hx-trigger");
              const cell = document.querySelector('td[data-exercise="conformance"]');
              cell.className = "cell-pending cell-trouble";
              cell.innerHTML = '<a class="quiet-link" href="#"></a>';
              const a = cell.querySelector("a");
              return words.filter(w => { a.textContent = w; return a.scrollWidth > a.clientWidth; });
            }""",
            list(CELL_WORDS),
        )
        assert cut == [], cut
    finally:
        context.close()


# Twenty names over 17 characters, each word short enough for the name column (a longer word is broken).
LONG_NAMES = (
    "Alexandra Papadopoulou", "Bartholomew Fitzgerald", "Christopher Montgomery", "Dominique Villeneuve-Roy",
    "Evangeline Thorncastle", "Fernando Rodríguez Díaz", "Gwendolyn Abernathy-Cole", "Hiroshi Yamamoto-Clarke",
    "Isabella Konstantinou", "Jean-Baptiste Lemaire", "Katherine Johnson-Smith", "Maximilian Oberhausen",
    "Nadezhda Vasilyevna K.", "Oluwaseun Adebayo-Bello", "Priyanka Venkataraman", "Quentin Beauchamp-Roux",
    "Rosalind Whitmore-Hale", "Sebastian Wolfe-Brandt", "Theodora Marchetti-Lind", "Wilhelmina Ashcroft",
)  # fmt: skip


def test_twenty_long_names_read_whole_on_a_projectors_grid(browser, live_server):
    """At 1280 px a name over about 15 characters read "Katherine Johns…", "Alexandra Papa…": the room could not
    tell who was stuck. Each now reads whole, on at most two lines, and every column stays under its header."""
    context = browser.new_context(viewport=PROJECTOR)
    context.set_default_timeout(BACKSTOP_MS)
    try:
        page = context.new_page()
        join_link = open_new_class(page, live_server.url, "Long names")
        for name in LONG_NAMES:
            join(join_link, name)
        page.reload()
        page.locator(f'tr[data-trainee="{LONG_NAMES[-1]}"]').wait_for()
        # A name is cut when its text reaches past the cell's box (cut by "…") or below its link's (clamped).
        cut = page.locator("table.room-grid tbody th").evaluate_all(
            """cells => cells.map(th => {
                 const a = th.querySelector("a"), range = document.createRange();
                 range.selectNodeContents(a);
                 const text = range.getBoundingClientRect(), cell = th.getBoundingClientRect();
                 const link = a.getBoundingClientRect();
                 const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
                 const whole = text.right <= cell.right + 1 && text.bottom <= Math.min(cell.bottom, link.bottom) + 1;
                 return whole && lines <= 2 ? null : `${a.textContent} (${lines} lines)`;
               }).filter(Boolean)"""
        )
        assert cut == [], cut
        # The grid keeps its columns: each row's cells under their headers, nothing wider than the screen.
        heads = page.locator("table.room-grid thead th").evaluate_all(
            "ths => ths.map(th => Math.round(th.getBoundingClientRect().left))"
        )
        rows = page.locator("table.room-grid tbody tr").evaluate_all(
            "trs => trs.map(tr => [...tr.children].map(c => Math.round(c.getBoundingClientRect().left)))"
        )
        assert all(row == heads for row in rows), (heads, rows[:3])
        assert page.evaluate("document.documentElement.scrollWidth") <= PROJECTOR["width"]
        assert (
            page.locator(f'tr[data-trainee="{LONG_NAMES[0]}"] th a').get_attribute("title") == LONG_NAMES[0]
        )
        # On a phone the names keep their 8.5rem column (two lines each; "Evan / gel…" when it shrank) and the
        # first exercise stays beside them.
        page.set_viewport_size(PHONE)
        widths = page.locator("table.room-grid tbody th a").evaluate_all(
            "links => links.map(a => a.getBoundingClientRect().width)"
        )
        assert min(widths) >= 120, widths
        first = (
            page.locator("table.room-grid tbody tr").first.locator("td[data-exercise]").first.bounding_box()
        )
        assert first["x"] + first["width"] <= PHONE["width"], first
    finally:
        context.close()
