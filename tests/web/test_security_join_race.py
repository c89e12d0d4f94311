"""Joins of one class at the same moment: on SQLite `FOR UPDATE` locks nothing, so two joins both counted room
for one more trainee and both joined (a bot holding the join link could fill a class past its cap)."""

from __future__ import annotations

import threading

import pytest

from console.extensions import db
from console.training import cohorts
from console.training.models import Cohort
from tests.api.at_once import meeting_after


@pytest.mark.committing
@pytest.mark.both_backends
def test_joins_at_the_same_moment_do_not_pass_the_classs_cap_together(app, monkeypatch):
    monkeypatch.setitem(app.config, "TRAINING_TRAINEES_PER_COHORT", 1)
    with app.app_context():
        cohort, _secret = cohorts.create_cohort("Race", ["link_token"])
        db.session.commit()
        cohort_id = cohort.id
    counted = cohorts.member_count
    monkeypatch.setattr(cohorts, "member_count", meeting_after(counted))
    outcomes: list[str] = []

    def join(name: str) -> None:
        with app.app_context():
            try:
                cohorts.join(db.session.get(Cohort, cohort_id), name)
                db.session.commit()
                outcomes.append("joined")
            except Exception as exc:  # the refusal, COHORT_FULL
                db.session.rollback()
                outcomes.append(getattr(exc, "code", repr(exc)))

    threads = [threading.Thread(target=join, args=(name,)) for name in ("Ada", "Grace")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["COHORT_FULL", "joined"]
    with app.app_context():
        assert counted(db.session.get(Cohort, cohort_id)) == 1
