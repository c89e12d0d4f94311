"""Creates from one browser (or many) at the same moment against a cap whose owner has no row to lock: on SQLite
`FOR UPDATE` locks nothing and the count ran outside any transaction, so each request counted room for one more
and together they passed the cap (a browser's classes, its presenter profiles, the server's profiles)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from sqlalchemy import func, select

from console.extensions import db
from console.presenter import profiles
from console.presenter.brand import Brand
from console.presenter.models import PresenterProfile
from console.training import cohorts
from console.training.models import Cohort
from tests.api.at_once import meeting_after

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]


def together(app, count: int, create: Callable[[int], object]) -> list[str]:
    """`create(n)` from `count` threads at once, each committing; "created" or the refusal's code each."""
    outcomes: list[str] = []

    def one(n: int) -> None:
        with app.app_context():
            try:
                create(n)
                db.session.commit()
                outcomes.append("created")
            except Exception as exc:  # the refusal (COHORT_LIMIT, PROFILE_LIMIT)
                db.session.rollback()
                outcomes.append(getattr(exc, "code", repr(exc)))

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def rows(app, model) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(model))


def brand(n: int) -> Brand:
    return Brand(f"Bank {n}", "B", "#1f6feb", "light")


def test_classes_created_at_once_by_one_browser_do_not_pass_its_cap_together(app, monkeypatch):
    monkeypatch.setitem(app.config, "TRAINING_COHORTS_PER_TRAINER", 1)
    monkeypatch.setattr(cohorts, "owned_count", meeting_after(cohorts.owned_count))
    outcomes = together(
        app, 2, lambda n: cohorts.create_cohort(f"Class {n}", ["link_token"], owner="browser-1")
    )
    assert sorted(outcomes) == ["COHORT_LIMIT", "created"]
    assert rows(app, Cohort) == 1


def test_profiles_saved_at_once_by_one_browser_do_not_pass_its_cap_together(app, monkeypatch):
    monkeypatch.setitem(app.config, "PRESENTER_PROFILES_PER_BROWSER", 1)
    monkeypatch.setattr(profiles, "owned_count", meeting_after(profiles.owned_count))
    outcomes = together(
        app, 2, lambda n: profiles.create(brand(n), [], owner="browser-1", address="127.0.0.1")
    )
    assert sorted(outcomes) == ["PROFILE_LIMIT", "created"]
    assert rows(app, PresenterProfile) == 1


def test_profiles_saved_at_once_by_several_browsers_do_not_pass_the_servers_cap_together(app, monkeypatch):
    """Never refused: the second save evicts the first's profile (the least recently used) instead of both
    finding room and the server keeping one more than its cap."""
    monkeypatch.setitem(app.config, "PRESENTER_MAX_PROFILES", 1)
    monkeypatch.setattr(profiles, "evict_for_one", meeting_after(profiles.evict_for_one))
    outcomes = together(
        app, 2, lambda n: profiles.create(brand(n), [], owner=f"browser-{n}", address="127.0.0.1")
    )
    assert outcomes == ["created", "created"]
    assert rows(app, PresenterProfile) == 1
