"""Link's step endpoint when two submits of one flow race (the optimistic lock of `LinkSession.version`)."""

from __future__ import annotations

import html
import json
import re

from sqlalchemy.orm.exc import StaleDataError

from console.link import flow as link_flow
from tests.web.linkflow import token_at_allocation


def _events(page: str) -> list[str]:
    found = re.search(r'data-events="([^"]*)"', page)
    assert found, page[:2000]
    return [e["name"] for e in json.loads(html.unescape(found.group(1)))]


def test_an_exit_that_loses_a_race_still_tells_the_sdk_to_close(client, workspace, monkeypatch):
    token = token_at_allocation(client, workspace)
    real_exit = link_flow.Flow.exit
    calls = []

    def exit_after_a_concurrent_write(self):
        calls.append(self.row.state)
        if len(calls) == 1:
            raise StaleDataError("another submit of this flow committed first")
        real_exit(self)

    monkeypatch.setattr(link_flow.Flow, "exit", exit_after_a_concurrent_write)
    response = client.post(
        "/sandbox/link/step", data={"token": token, "action": "exit"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert 'data-screen="exited"' in page
    assert _events(page)[-1] == "exit"  # link-frame.js relays it; the SDK closes Link on it
    assert calls == ["allocation", "allocation"]
