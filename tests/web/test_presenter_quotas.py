"""Presenter profiles: a cap per creating browser, and a server-wide cap that evicts, never refuses."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import event, func, select, update

from console.core.timeutil import utcnow
from console.extensions import db
from console.presenter import profiles
from console.presenter.models import PresenterProfile
from tests.web.conftest import Visitor
from tests.web.test_presenter import save_profile


def count(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(PresenterProfile))


def last_used(app, slug: str):
    with app.app_context():
        return profiles.get(slug).last_used_at


def set_last_used(app, slug: str, days_ago: float) -> None:
    with app.app_context():
        db.session.execute(
            update(PresenterProfile)
            .where(PresenterProfile.slug == slug)
            .values(last_used_at=utcnow() - timedelta(days=days_ago))
        )
        db.session.commit()


def test_one_browser_may_keep_its_cap_of_profiles_and_is_told_so_with_the_code(app, visitor, other_visitor):
    app.config["PRESENTER_PROFILES_PER_BROWSER"] = 2
    first, _ = save_profile(visitor)
    save_profile(visitor)
    refused = visitor.post("/present/profiles", {"brand": "Third"})
    page = refused.get_data(as_text=True)
    assert refused.status_code == 409
    assert "This browser has already saved 2 demo profiles" in page
    assert '<code id="error-code">PROFILE_LIMIT</code>' in page
    assert count(app) == 2
    # Another browser is not affected by this one's cap.
    save_profile(other_visitor)
    # Deleting one frees a place.
    assert visitor.post(f"/present/profiles/{first}/delete").status_code == 303
    save_profile(visitor)
    assert count(app) == 3


def test_a_new_visitor_is_never_refused_when_the_server_is_full(app, visitor):
    app.config["PRESENTER_MAX_PROFILES"] = 3
    slugs = [save_profile(visitor, brand=f"Bank {n}")[0] for n in range(3)]
    for slug, days in zip(slugs, (2, 9, 5), strict=True):
        set_last_used(app, slug, days)
    newcomer = Visitor(app.test_client()).start()
    new_slug, _ = save_profile(newcomer, brand="Newcomer")
    assert count(app) == 3
    # The profile nobody had opened for the longest time made room; the others are untouched.
    assert newcomer.get(f"/p/{slugs[1]}").status_code == 404
    assert newcomer.get(f"/p/{slugs[0]}").status_code == 200
    assert newcomer.get(f"/p/{slugs[2]}").status_code == 200
    assert newcomer.get(f"/p/{new_slug}").status_code == 200
    # And again, for as many newcomers as come: each one is saved, the cap holds.
    for n in range(4):
        save_profile(Visitor(app.test_client()).start(), brand=f"Later {n}")
    assert count(app) == 3


def test_the_server_wide_cap_is_not_refused_even_when_every_profile_was_just_used(app, visitor):
    app.config["PRESENTER_MAX_PROFILES"] = 2
    save_profile(visitor)
    save_profile(visitor)
    response = Visitor(app.test_client()).start().post("/present/profiles", {"brand": "Newcomer"})
    assert response.status_code == 303
    assert count(app) == 2


def test_opening_a_profile_keeps_it_and_is_written_at_most_once_an_hour(app, visitor):
    app.config["PRESENTER_MAX_PROFILES"] = 2
    kept, _ = save_profile(visitor, brand="Opened")
    idle, _ = save_profile(visitor, brand="Idle")
    set_last_used(app, kept, 30)
    set_last_used(app, idle, 20)
    with app.app_context():
        engine = db.engine
    writes: list[str] = []

    def statement(_conn, _cursor, sql, *_args):
        if sql.lstrip().upper().startswith("UPDATE") and "presenter_profiles" in sql:
            writes.append(sql)

    event.listen(engine, "before_cursor_execute", statement)
    try:
        # The prospect's short link, then the stage, several times: one write, on the first view.
        assert visitor.get(f"/p/{kept}").status_code == 200
        assert len(writes) == 1
        for _ in range(3):
            assert visitor.get(f"/present/10-standard-switch?profile={kept}").status_code == 200
            assert visitor.get(f"/present?profile={kept}").status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", statement)
    assert len(writes) == 1, writes
    assert utcnow() - last_used(app, kept) < timedelta(hours=1)
    # Now the other one is the least recently used: the next save evicts it, not the opened one.
    save_profile(Visitor(app.test_client()).start(), brand="Newcomer")
    assert visitor.get(f"/p/{idle}").status_code == 404
    assert visitor.get(f"/p/{kept}").status_code == 200


def test_an_evicted_profile_leaves_its_browser_a_place(app, visitor):
    app.config["PRESENTER_MAX_PROFILES"] = 1
    app.config["PRESENTER_PROFILES_PER_BROWSER"] = 1
    mine, _ = save_profile(visitor)
    save_profile(Visitor(app.test_client()).start(), brand="Someone else")
    assert visitor.get(f"/p/{mine}").status_code == 404
    # Only profiles that still exist count towards a browser's cap.
    save_profile(visitor, brand="Again")
    page = visitor.get("/present").get_data(as_text=True)
    assert f'data-my-profile="{mine}"' not in page


def test_at_the_cap_an_address_holding_more_than_its_share_is_evicted_from_first(app):
    """A bot saving from one address (a new browser each time, within the per-address rate) evicted everyone's
    profiles, the least recently used first; now it churns its own once it holds more than a tenth of the cap."""
    app.config["PRESENTER_MAX_PROFILES"] = 10

    def browser(address: str) -> Visitor:
        client = app.test_client()
        client.environ_base["REMOTE_ADDR"] = address
        return Visitor(client).start()

    presenters = [save_profile(browser(f"192.0.2.{n}"), brand=f"Bank {n}")[0] for n in range(1, 4)]
    for slug in presenters:
        set_last_used(app, slug, 60)  # idle for two months: the oldest on the server
    bot = [save_profile(browser("198.51.100.7"), brand=f"Bot {n}")[0] for n in range(7)]
    assert count(app) == 10
    for n in range(20):  # past the cap, again and again
        bot.append(save_profile(browser("198.51.100.7"), brand=f"Bot {n + 7}")[0])
    assert count(app) == 10
    someone = browser("203.0.113.9")
    assert [someone.get(f"/p/{slug}").status_code for slug in presenters] == [200, 200, 200]
    assert [someone.get(f"/p/{slug}").status_code for slug in bot[-7:]] == [200] * 7
    # Within its share (the bot's 7 of a cap of 80 is under a tenth), no address is singled out: the
    # least recently used profile of all goes.
    app.config["PRESENTER_MAX_PROFILES"] = 80
    mixed = [save_profile(browser(f"192.0.2.{n}"), brand=f"Other {n}")[0] for n in range(10, 80)]
    assert count(app) == 80
    set_last_used(app, presenters[0], 90)  # (opened above, so no longer idle: made the oldest again)
    save_profile(browser("203.0.113.9"), brand="Newcomer")
    assert someone.get(f"/p/{presenters[0]}").status_code == 404  # the least recently used of all
    assert all(someone.get(f"/p/{slug}").status_code == 200 for slug in mixed)
