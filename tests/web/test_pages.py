"""Every page renders, htmx requests get the fragment, and the markup is accessible."""

from __future__ import annotations

import re

import pytest

from tests.web.helpers import run_headless

PAGES = [
    ("/", "console/walkthrough/walkthrough.html", None),
    ("/scenarios", "console/scenarios/scenarios.html", None),
    ("/events", "console/events/events.html", "console/events/_events.html"),
    ("/timeline", "console/timeline/timelines.html", "console/timeline/_timelines.html"),
    ("/webhooks", "console/webhooks/webhooks.html", "console/webhooks/_webhooks.html"),
    ("/requests", "console/requests/requests.html", "console/requests/_request_rows.html"),
    ("/keys", "console/keys/keys.html", "console/keys/_keys.html"),
    ("/clock", "console/clock/clock.html", "console/clock/_clock.html"),
    ("/world", "console/world/world.html", "console/world/_world_rows.html"),
    ("/world?tab=employers&q=bak", "console/world/world.html", "console/world/_world_rows.html"),
    ("/world?tab=people", "console/world/world.html", "console/world/_world_rows.html"),
    ("/world?tab=benefits", "console/world/world.html", "console/world/_world_rows.html"),
    ("/world/people/morgan-castillo", "console/world/person.html", None),
    ("/reference", "console/reference/reference.html", None),
    ("/launch", "console/scenarios/launch.html", None),
]


@pytest.mark.parametrize(("url", "full", "partial"), PAGES)
def test_page_and_its_fragment(visitor, rendered, url, full, partial):
    rendered.clear()
    response = visitor.get(url)
    assert response.status_code == 200
    assert rendered == [full]
    html = response.get_data(as_text=True)
    assert '<main id="main"' in html and 'lang="en"' in html
    assert "https://" not in html.split("<body", 1)[0]  # nothing from a CDN
    if partial:
        rendered.clear()
        fragment = visitor.get(url, htmx=True)
        assert fragment.status_code == 200 and rendered == [partial]
        assert "<html" not in fragment.get_data(as_text=True)


def test_every_form_field_has_a_label(visitor):
    import re

    run_headless(visitor, "user_good")
    for url in ("/", "/webhooks", "/keys", "/events"):
        html = visitor.get(url).get_data(as_text=True)
        ids = set(re.findall(r'<(?:input|select|textarea)[^>]*\bid="([^"]+)"', html))
        labelled = set(re.findall(r'<label[^>]*\bfor="([^"]+)"', html))
        assert ids <= labelled, (url, ids - labelled)


def test_the_nav_marks_the_current_page(visitor):
    html = visitor.get("/events").get_data(as_text=True)
    assert '<a href="/events" aria-current="page">Event log</a>' in html


def test_the_api_reference_renders_the_openapi_document(visitor):
    html = visitor.get("/reference").get_data(as_text=True)
    assert "/sandbox/v1/openapi.json" in html
    assert "/v1/link_tokens" in html and "Create a Link token" in html


def test_a_persons_deposit_split_reads_as_money_not_a_bare_integer(visitor):
    # Gabriel Abbott's old WorkNest job sends 50000 (cents, the API's unit) to savings before the remainder.
    html = visitor.get("/world/people/gabriel-abbott").get_data(as_text=True)
    assert re.search(r"<td>\$500\.00 <span class=\"muted\">\(50000 cents\)</span></td>", html), html
