"""Which request-log rows are a listener's own requests, the rows the Requests page hides unless asked.

`console listen` (and the training room's `pcc.py listen`) opens a relayed webhook (`POST /v1/sandbox/listen`),
asks for deliveries once a second (`POST /v1/sandbox/listen/{id}/poll`) and reports each answer of the local
endpoint (`.../deliveries/{attempt_id}/result`): a minute of listening is 60 rows, and the workspace's own calls
scroll out of sight. They are the tool's traffic, not the integration's (Stripe's dashboard does not list its
CLI's polling among your API requests), so the page hides them by default and says how many it hid. They are
still logged, as every authenticated call is (the training grid reads a trainee's newest call from the log),
and one that failed (401, 404, 409, 429, 5xx) is not routine: it is listed like any other failed call.
"""

from __future__ import annotations

from sqlalchemy import and_, or_
from sqlalchemy.sql.elements import ColumnElement

from console.requestlog.models import RequestLogEntry

# The relay's routes under a mode's prefix: /sandbox/v1/sandbox/listen and /sandbox/v1/sandbox/listen/<id>/...
OPEN_SUFFIX = "/v1/sandbox/listen"


def clause() -> ColumnElement[bool]:
    """Rows that are a listener's request answered 2xx (never a console call: the console does not listen)."""
    return and_(
        RequestLogEntry.method == "POST",
        RequestLogEntry.step == "",
        or_(RequestLogEntry.path.like(f"%{OPEN_SUFFIX}"), RequestLogEntry.path.like(f"%{OPEN_SUFFIX}/%")),
        # Never NULL, so NOT of this is true for a row without a status (no response) rather than unknown.
        RequestLogEntry.status.is_not(None),
        RequestLogEntry.status >= 200,
        RequestLogEntry.status < 300,
    )
