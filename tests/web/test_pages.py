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


def test_the_api_reference_says_what_each_id_in_a_path_names(visitor):
    # The document describes no path parameter: every `webhook_id`, `account_id`… had an empty Description cell.
    html = visitor.get("/reference").get_data(as_text=True).replace("&#39;", "'")
    assert re.search(r"<code>webhook_id</code></td><td[^>]*>path</td><td[^>]*>The webhook's id\.</td>", html)
    assert re.search(
        r"<code>link_token_id</code></td><td[^>]*>path</td><td[^>]*>The link token's id\.</td>", html
    )
    assert not re.search(r"</td><td[^>]*>path</td><td[^>]*></td>", html)


def test_a_persons_deposit_split_reads_as_money_not_a_bare_integer(visitor):
    # Gabriel Abbott's old WorkNest job sends 50000 (cents, the API's unit) to savings before the remainder.
    html = visitor.get("/world/people/gabriel-abbott").get_data(as_text=True)
    assert re.search(r"<td>\$500\.00 <span class=\"muted\">\(50000 cents\)</span></td>", html), html


def test_the_api_reference_shows_each_bodys_fields_and_answers(visitor):
    html = visitor.get("/reference").get_data(as_text=True)
    operation = html[html.index('id="post--link_tokens"') :]
    operation = operation[: operation.index('class="try-it"')]
    fields = re.findall(
        r"<tr><td><code>([a-z_]+)</code>( <span class=\"badge\">required</span>)?</td>", operation
    )
    # Required fields first, then the rest (each group in the document's order).
    required = ' <span class="badge">required</span>'
    assert sorted(name for name, mark in fields[:3] if mark == required) == [
        "allocation",
        "org_name",
        "required_jobs",
    ]
    assert ("skip_intro_screen", "") in fields
    assert "array of one of: direct_deposit_switch, employment, income, identity" in operation
    assert "string (uuid), or null" in operation  # platform_id
    assert re.search(r"<summary>Answers: 200, 400, 401, [^<]*503</summary>", operation)
    assert "Body is not JSON: send Content-Type: application/json." in operation
    # The document's Markdown code spans read as code, never as backticks.
    assert "<code>end_user.platform_matching</code>" in operation and "`" not in operation


def test_the_api_reference_shows_the_fields_of_a_referenced_schema_under_the_field_holding_it(visitor):
    """POST /v1/link_tokens named `allocation`'s schema, LinkTokenAllocation, and no more: what goes in it was
    learnt from its 400s. Its fields follow it, named by their path as the API's errors name them."""
    html = visitor.get("/reference").get_data(as_text=True)
    operation = html[html.index('id="post--link_tokens"') :]
    operation = operation[: operation.index('class="try-it"')]
    rows = re.findall(
        r'<tr(?: class="nested-field")?><td><code>(?:<span class="muted">((?:[^<]|<wbr>)*)</span>)?([a-z_]+)</code>'
        r'( <span class="badge">required</span>)?</td><td class="wrap"[^>]*>([^<]*)</td><td[^>]*>(.*?)</td></tr>',
        operation,
    )
    # Each dot of a path may break a line (a phone's width): `end_user.<wbr>platform_matching.<wbr>email`.
    rows = [(parent.replace("<wbr>", ""), *rest) for parent, *rest in rows]
    paths = [parent + name for parent, name, _required, _type, _description in rows]
    at = paths.index("allocation")
    assert paths[at : at + 6] == [
        "allocation",
        "allocation.targets",
        "allocation.targets[].account_number",  # (the served document's keys are in sorted order)
        "allocation.targets[].routing_number",
        "allocation.targets[].type",
        "allocation.type",
    ]
    by_path = {parent + name: (bool(required), kind, text) for parent, name, required, kind, text in rows}
    assert by_path["allocation"][1] == "LinkTokenAllocation"
    assert by_path["allocation"][2].startswith("The target accounts")  # the schema's own description
    assert by_path["allocation.targets"] == (
        True,
        "array of Target",
        "",
    )  # an item's words are not the array's
    assert by_path["allocation.targets[].routing_number"] == (True, "string", "Passes the ABA checksum.")
    assert by_path["allocation.value"][0] is False
    # A nullable reference opens too, a level deeper; the top-level fields keep their order after it.
    assert by_path["end_user.platform_matching.email"][:2] == (True, "string (email)")
    assert (
        paths.index("end_user") < paths.index("end_user.platform_matching.email") < paths.index("end_user_id")
    )


def test_a_referenced_schema_is_opened_once_on_its_own_path_and_to_a_bounded_depth():
    from console.web.reference.document import MAX_NESTING, _body

    def ref(name):
        return {"$ref": f"#/components/schemas/{name}"}

    schemas = {
        "Node": {"type": "object", "properties": {"next": ref("Node"), "n": {"type": "integer"}}},
        "Deep": {"type": "object", "properties": {"down": ref("Deeper")}},
        "Deeper": {"type": "object", "properties": {"down": ref("Deepest")}},
        "Deepest": {"type": "object", "properties": {"down": ref("Bottom")}},
        "Bottom": {"type": "object", "properties": {"x": {"type": "string"}}},
    }
    properties = {"node": ref("Node"), "deep": ref("Deep")}
    body = {"content": {"application/json": {"schema": {"type": "object", "properties": properties}}}}
    fields, _ = _body({"components": {"schemas": schemas}}, body)
    paths = [f.path for f in fields]
    assert paths[:3] == ["node", "node.next", "node.n"]  # Node within itself: named, not opened again
    assert MAX_NESTING == 3 and "deep.down.down.down" in paths and "deep.down.down.down.x" not in paths


def test_reference_descriptions_are_escaped_with_their_code_spans():
    from console.web.reference.document import code_spans, type_of

    assert (
        str(code_spans("use `a<b>` & <i>x</i>")) == "use <code>a&lt;b&gt;</code> &amp; &lt;i&gt;x&lt;/i&gt;"
    )
    assert str(code_spans("one ` alone")) == "one ` alone"
    assert (
        type_of({"anyOf": [{"$ref": "#/components/schemas/EndUser"}, {"type": "null"}]}) == "EndUser, or null"
    )
    assert type_of({"type": "array", "items": {"type": "string"}}) == "array of string"
