"""The API reference's Try it in a real browser: its form reads top to bottom at 1280 and 390 px."""

from __future__ import annotations


def test_try_it_puts_each_label_above_its_field(page, live_server):
    for width, height in ((1280, 720), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(live_server.url + "/reference")
        operation = page.locator("#post--link_tokens")
        operation.locator("details.try-it summary").click()
        mode = operation.get_by_label("Mode").bounding_box()
        body_label = operation.locator("label", has_text="JSON body").bounding_box()
        body = operation.get_by_label("JSON body").bounding_box()
        # "JSON body" sat on the mode select's line, where it read as the select's value.
        assert body_label["y"] >= mode["y"] + mode["height"], f"at {width} px"
        assert body["y"] >= body_label["y"] + body_label["height"], f"at {width} px"
        assert page.evaluate("document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth")
