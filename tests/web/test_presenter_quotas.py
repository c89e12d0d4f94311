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
