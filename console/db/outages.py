"""A worker loop's database outage told in a few lines, not a traceback every pass.

A loop that cannot reach the database (PostgreSQL restarted or down, a connection cut) logged the full
traceback with its SQL at ERROR on every pass, four times a second for the scheduler, until the database came
back. Now an outage is one WARNING when it starts, one a minute while it lasts and one when the database answers
again; any other failure is still logged with its traceback.
"""

from __future__ import annotations

import logging
import sys
import time

from sqlalchemy import exc as sa_exc

# Seconds between two "still cannot be reached" lines of one loop.
REPEAT_SECONDS = 60.0


def is_outage(error: BaseException | None) -> bool:
    """Whether `error` says the database cannot be reached (rather than that a statement is wrong)."""
    if isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated:
        return True
    # OperationalError: refused, reset, terminated, timed out; InterfaceError: a closed connection;
    # TimeoutError: no pooled connection came free in time.
    return isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.TimeoutError)


def _summary(error: BaseException) -> str:
    # The driver's first line: SQLAlchemy's wrapper adds the statement and its parameters.
    cause = getattr(error, "orig", None) or error
    first = (str(cause).strip().splitlines() or [""])[0][:200]
    return f"{type(cause).__name__}: {first}" if first else type(cause).__name__


class Outage:
    """One loop's view of the database: `failed` in its `except`, `answered` after a pass that worked."""

    def __init__(self, log: logging.Logger, what: str) -> None:
        self.log = log
        self.what = what  # e.g. "Scheduler batch"
        self.since: float | None = None
        self.logged_at = 0.0

    def failed(self, retrying: str, error: BaseException | None = None) -> None:
        """Log the exception being handled (or `error`, one caught earlier): a line for an outage (its start,
        then once a minute), else the traceback. `retrying` says when the loop tries again, e.g. "at the
        next poll"."""
        error = error if error is not None else sys.exc_info()[1]
        if not is_outage(error):
            self.log.error("%s failed; retrying %s", self.what, retrying, exc_info=error)
            return
        now = time.monotonic()
        if self.since is None:
            self.since = self.logged_at = now
            self.log.warning(
                "%s failed: the database cannot be reached (%s); retrying %s",
                self.what,
                _summary(error),
                retrying,
            )
        elif now - self.logged_at >= REPEAT_SECONDS:
            self.logged_at = now
            self.log.warning(
                "%s: the database still cannot be reached after %.0f s (%s)",
                self.what,
                now - self.since,
                _summary(error),
            )

    def answered(self) -> None:
        """A pass reached the database: say so once if it could not before."""
        if self.since is not None:
            self.log.warning(
                "%s: the database answers again after %.0f s", self.what, time.monotonic() - self.since
            )
            self.since = None
