"""docs/presenter.md's example story is one the stage reads as it stands (what `console stories check` says)."""

from __future__ import annotations

import re
from pathlib import Path

from console.presenter import stories

DOC = Path(__file__).resolve().parents[2] / "docs" / "presenter.md"


def test_the_documented_story_reads_without_a_mistake(app, tmp_path):
    (example,) = re.findall(r"```json\n(.*?)```", DOC.read_text(), re.S)
    path = tmp_path / "my-story.json"
    path.write_text(example)
    with app.app_context():
        story, problem = stories.check_file(path)
    assert problem is None
    assert story is not None and len(story.steps) == example.count('"caption"')
