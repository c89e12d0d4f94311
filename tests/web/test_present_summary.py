"""The printable summary before any run: what the page says instead of empty tables."""

from __future__ import annotations

import re


def note(page: str) -> str:
    found = re.search(r'<p class="callout summary-note"[^>]*>(.*?)</p>', page, re.S)
    assert found, page
    return " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split())


def test_a_story_not_run_yet_says_so_in_two_sentences(visitor):
    page = visitor.get("/present/10-standard-switch/summary").get_data(as_text=True)
    # It read "No run of this story yet in this browser: Run this story on the stage ...".
    assert note(page) == (
        "No run of this story yet in this browser. Run it on the stage (→ from its title) for its webhooks and "
        "API calls here."
    )
