"""Stories as data: one JSON file per story in the stories folder, each a list of steps.

A story file is `{"title", "summary", "steps": [{"caption", "action"?, "pause"?, ...arguments}]}`:
every key of a step other than caption, action and pause is an argument of its action (see
`console.web.present.actions.ACTIONS`, handed to this module by `create_app`
as `app.extensions["story_actions"]`, so the domain imports no web code). Files are looked at on each request
(and parsed again once one changes), so a story added to the folder appears without a restart; a file that
does not parse is listed with what is wrong instead of breaking the others. The folder is
`PRESENTER_STORIES_DIR`, else the stories shipped in this package.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask import current_app

BUILT_IN_DIR = Path(__file__).with_name("stories")
# A story's key is its file name: short, URL-safe, and never a path.
KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_FILE_BYTES = 64_000
MAX_STEPS = 60
MAX_CAPTION = 400
# A title sits beside the step count in the caption bar and on the story's card; a summary is the title
# screen's caption. Longer ones ran off a 1280x720 stage (a pasted paragraph as a title filled the bar).
MAX_TITLE = 80
MAX_SUMMARY = MAX_CAPTION
STORY_KEYS = ("title", "summary", "steps")
STEP_KEYS = ("caption", "action", "pause", "printed")


def _action_checks() -> dict[str, Any]:
    """Each action a step may name -> its argument check (a message, or None when the arguments are fine)."""
    return current_app.extensions["story_actions"]


@dataclass(frozen=True)
class Step:
    caption: str
    action: str | None
    arguments: dict[str, Any] = field(default_factory=dict)
    pause: bool = False
    # The caption on the printed summary, when the stage's words point at the screen ("shown on the right").
    printed: str = ""

    @property
    def on_paper(self) -> str:
        return self.printed or self.caption


@dataclass(frozen=True)
class Story:
    key: str
    title: str
    summary: str
    steps: tuple[Step, ...]

    def title_for(self, name: str) -> str:
        """The title with `{brand}` filled in, as captions are (the picker and the summary showed "{brand}")."""
        return self.title.replace("{brand}", name)

    def summary_for(self, name: str) -> str:
        return self.summary.replace("{brand}", name)

    def link_open_at(self, number: int) -> bool:
        """Link belongs open in the phone at step `number`: an `open_link` step at or before it, and no step
        since that creates another token or completes Link (the stage reopens it after a reload there)."""
        for step in reversed(self.steps[: max(0, number)]):
            if step.action == "open_link":
                return True
            if step.action in ("create_link_token", "complete_link"):
                return False
        return False

    def link_restart_at(self, number: int) -> int | None:
        """Where the story goes again when Link, open in the phone at step `number`, is closed before the end
        (its token is used up then): the step that created that token, else the `open_link` step itself.
        None when Link is not open at step `number`."""
        if not self.link_open_at(number):
            return None
        opened = next(n for n in range(number, 0, -1) if self.steps[n - 1].action == "open_link")
        for n in range(opened - 1, 0, -1):
            action = self.steps[n - 1].action
            if action == "create_link_token":
                return n
            if action in ("open_link", "complete_link"):
                break
        return opened


@dataclass(frozen=True)
class BrokenStory:
    """A story file that could not be read: listed on the stage with the reason."""

    key: str
    problem: str
    file: str = ""  # the file's name, when it is not `<key>.json`

    @property
    def file_name(self) -> str:
        return self.file or f"{self.key}.json"


class StoryError(ValueError):
    pass


# A tag as people type them in a caption (<b>, </i>, <br/>, <a href=...>, <script>): the stage shows words as typed,
# so a caption holding one put "<b>" in front of the room.
# Only HTML's own element names: "press <Enter>" is words.
TAG = re.compile(
    r"</?(a|abbr|b|big|blockquote|br|center|code|del|div|em|font|h[1-6]|hr|i|iframe|img|ins|kbd|li|mark|ol|p|pre|"
    r"s|script|small|span|strike|strong|style|sub|sup|table|td|th|tr|u|ul)(\s[^<>]*)?/?>",
    re.IGNORECASE,
)


def text_problem(text: str) -> str | None:
    """Why `text` cannot be a caption, title or summary as written (HTML, a NUL character), or None."""
    tag = TAG.search(text)
    if tag:
        return (
            f"holds HTML ({tag.group(0)[:40]}): the stage shows plain text as typed, so write it without tags"
        )
    if "\x00" in text:
        return "holds a NUL character"
    return None


def did_you_mean(value: Any, known) -> str:
    """' (did you mean 'x'?)' when `value` is a near miss of one of `known`, else ''."""
    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def stories_dir() -> Path:
    configured = current_app.config.get("PRESENTER_STORIES_DIR")
    return Path(configured) if configured else BUILT_IN_DIR


def _step(number: int, raw: Any) -> Step:
    where = f"step {number}"
    if not isinstance(raw, dict):
        raise StoryError(f"{where} must be an object")
    caption = raw.get("caption")
    if not isinstance(caption, str) or not caption.strip():
        raise StoryError(f"{where} needs a caption (text)")
    if len(caption) > MAX_CAPTION:
        raise StoryError(f"{where}: the caption is longer than {MAX_CAPTION} characters")
    if text_problem(caption):
        raise StoryError(f"{where}: the caption {text_problem(caption)}")
    action = raw.get("action")
    checks = _action_checks()
    if action is not None and action not in checks:
        raise StoryError(
            f"{where}: unknown action {action!r}{did_you_mean(action, checks)} (known: {', '.join(sorted(checks))})"
        )
    pause = raw.get("pause", False)
    if not isinstance(pause, bool):
        raise StoryError(f"{where}: pause must be true or false")
    arguments = {k: v for k, v in raw.items() if k not in STEP_KEYS}
    for key in sorted(arguments):  # "puase", "captoin": a step key misspelt reads as an action's argument
        hint = did_you_mean(key, STEP_KEYS)
        if hint:
            raise StoryError(f"{where}: unknown key {key!r}{hint}")
    if action is None and arguments:
        raise StoryError(f"{where}: {', '.join(sorted(arguments))} given without an action")
    if action is not None:
        problem = checks[action](arguments)
        if problem:
            raise StoryError(f"{where} ({action}): {problem}")
    printed = raw.get("printed", "")
    if not isinstance(printed, str) or len(printed) > MAX_CAPTION:
        raise StoryError(f"{where}: printed must be text of at most {MAX_CAPTION} characters")
    if text_problem(printed):
        raise StoryError(f"{where}: printed {text_problem(printed)}")
    return Step(caption.strip(), action, arguments, pause, printed.strip())


def _in_order(steps: tuple[Step, ...]) -> None:
    """Steps that can only fail on the stage, whatever the presenter does, said when the file is read: Link
    opened or completed before any token exists, opened again after its token was used, a scenario whose answers
    cannot complete the token's preset, an on-demand update before a switch, a refused webhook awaited while the
    receiver answers 200."""
    token = None  # None: no Link token yet; else the step that created it, and whether it has been used
    preset = ""
    used_by = 0
    misfit = current_app.extensions.get("story_scenario_fits")
    switched = False
    failing = False
    for number, step in enumerate(steps, 1):
        where = f"step {number} ({step.action})"
        if step.action == "create_link_token":
            if step.arguments.get("preset") == "on_demand" and not switched:
                raise StoryError(
                    f"{where}: an on_demand token updates an account already connected: put a complete_link "
                    "step (a first switch) before it"
                )
            token, used_by, preset = number, 0, step.arguments.get("preset", "")
        elif step.action in ("open_link", "complete_link"):
            if token is None:
                raise StoryError(
                    f"{where}: there is no Link token yet: put a create_link_token step before it"
                )
            if step.action == "open_link" and used_by:
                raise StoryError(
                    f"{where}: step {used_by} already used the Link token of step {token}: put a "
                    "create_link_token step between them"
                )
            if step.action == "complete_link":
                problem = misfit(preset, step.arguments.get("scenario")) if misfit else None
                if problem:
                    raise StoryError(f"{where}: {problem} (the token of step {token})")
                used_by, switched = number, True
        elif step.action == "set_inbox_behaviour":
            failing = step.arguments.get("behaviour") == "fail"
        elif step.action == "wait_for_event" and step.arguments.get("refused") and not failing:
            raise StoryError(
                f"{where}: a refused webhook needs the receiver failing: put a set_inbox_behaviour step with "
                '"behaviour": "fail" before it'
            )


def _json_hint(error: json.JSONDecodeError) -> str:
    """The usual slip behind a JSON error, in words: a comma before a closing bracket, single quotes."""
    before = error.doc[: error.pos].rstrip()
    after = error.doc[error.pos : error.pos + 1]
    if before.endswith(",") and after in ("]", "}"):
        return " (a comma after the last item? JSON allows none)"
    if after == "'":
        return " (JSON needs double quotes)"
    if error.msg == "Expecting ',' delimiter":
        return " (a comma missing between two items?)"
    if error.msg == "Extra data":
        return " (something after the story's last closing brace: one story per file)"
    if error.msg == "Invalid control character at":
        return " (a line break inside quotes? keep each caption on one line)"
    return ""


def _json(text: str) -> Any:
    text = text.removeprefix("\ufeff")  # a byte order mark, as some editors save UTF-8: not a mistake
    try:
        return json.loads(text)
    except RecursionError:  # "[[[[...": read as a story file, it broke the whole /present page (a 500)
        raise StoryError("not valid JSON: nested too deeply") from None
    except json.JSONDecodeError as error:
        raise StoryError(
            f"not valid JSON at line {error.lineno}, column {error.colno}: {error.msg}{_json_hint(error)}"
        ) from None
    except ValueError as error:  # a number of thousands of digits
        raise StoryError(f"not valid JSON: {str(error).split(';')[0]}") from None


def parse(key: str, text: str) -> Story:
    """A story from its file's text; StoryError says what is wrong (shown on the stage)."""
    data = _json(text)
    if not isinstance(data, dict):
        raise StoryError("the file must hold one JSON object")
    for name in sorted(k for k in data if k not in STORY_KEYS):
        # A misspelt "summary" was silently dropped: the title screen then showed no words at all.
        raise StoryError(
            f"unknown key {name!r}{did_you_mean(name, STORY_KEYS)}: a story has {', '.join(STORY_KEYS)}"
        )
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        raise StoryError("needs a title (text)")
    if len(title.strip()) > MAX_TITLE:
        raise StoryError(f"the title is longer than {MAX_TITLE} characters (put the rest in the summary)")
    if text_problem(title):
        raise StoryError(f"the title {text_problem(title)}")
    summary = data.get("summary", "")
    if not isinstance(summary, str):
        raise StoryError("summary must be text")
    if len(summary.strip()) > MAX_SUMMARY:
        raise StoryError(f"the summary is longer than {MAX_SUMMARY} characters")
    if text_problem(summary):
        raise StoryError(f"the summary {text_problem(summary)}")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise StoryError("needs steps: a list of at least one step")
    if len(steps) > MAX_STEPS:
        raise StoryError(f"has more than {MAX_STEPS} steps")
    parsed = tuple(_step(i, s) for i, s in enumerate(steps, 1))
    _in_order(parsed)
    return Story(key, title.strip(), summary.strip(), parsed)


def _text(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise StoryError(
            f"the file is not UTF-8 text (byte {raw[error.start]:#04x} at position {error.start}): "
            "save it as UTF-8"
        ) from None


# path -> (its inode, times and size when read, the story or the error it read as). Why: the stage and
# the gallery read every story on each request, and parsing them was ~5 % of a serving process's time under a
# room's load (`py-spy --gil` during `bench.neighbours`); a file is parsed again only once it changes, so a
# story added or edited still appears on the next request. Stories are frozen, so threads may share them.
_parsed: dict[Path, tuple[tuple[int, ...], Story | StoryError]] = {}
_PARSED_MOST = 512  # more files than that in the folder: read the rest each time, memory stays bounded


def _read(path: Path) -> Story:
    status = path.stat()
    if status.st_size > MAX_FILE_BYTES:
        raise StoryError(
            f"the file is {status.st_size:,} bytes, more than a story's {MAX_FILE_BYTES:,} "
            f"(at most {MAX_STEPS} steps of {MAX_CAPTION} characters)"
        )
    version = (status.st_ino, status.st_mtime_ns, status.st_ctime_ns, status.st_size)
    known = _parsed.get(path)
    if known is None or known[0] != version:
        try:
            result: Story | StoryError = parse(path.stem, _text(path))
        except StoryError as error:
            result = error
        if len(_parsed) < _PARSED_MOST or path in _parsed:
            _parsed[path] = (version, result)
    else:
        result = known[1]
    if isinstance(result, StoryError):
        raise StoryError(str(result))
    return result


def _files() -> list[Path]:
    folder = stories_dir()
    if not folder.is_dir():
        return []
    return sorted(folder.glob("*.json"))


# Files a story writer meant as stories that are not `.json` files: skipped without a word, the story simply missing
# from the list on the day (YAML, "Story.JSON", Windows' hidden "story.json.txt").
NOT_JSON = (".yaml", ".yml", ".json5", ".jsonc", ".json.txt")


def _not_json() -> list[BrokenStory]:
    folder = stories_dir()
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        name = path.name
        lower = name.lower()
        meant = next((suffix for suffix in NOT_JSON if lower.endswith(suffix)), None)
        if meant is None and lower.endswith(".json") and not name.endswith(".json"):
            meant = name[-5:]  # ".JSON": glob is case-sensitive, so it was never read
        if meant is None or not path.is_file():
            continue
        stem = name[: -len(meant)]
        what = "JSON, not YAML" if meant in (".yaml", ".yml") else "JSON"
        found.append(
            BrokenStory(stem, f"a story is a .json file ({what}): save it as {stem}.json", file=name)
        )
    return found


BAD_NAME = (
    "the file name is not a story's address: lowercase letters, digits, - and _, starting with a letter or "
    "digit (rename it, say to {suggested}.json)"
)


def _problem_of(error: Exception) -> str:
    """In words: an OSError said "[Errno 21] Is a directory: '/srv/.../x.json'" (the server's own path)."""
    if isinstance(error, OSError):
        return f"the file cannot be read ({(error.strerror or 'an error').lower()})"
    return str(error)


def check_file(path: Path) -> tuple[Story | None, str | None]:
    """One file as the stage would read it from the stories folder: its story, or what is wrong with it in
    words (`console stories check`, before a demo)."""
    name, lower = path.name, path.name.lower()
    if not lower.endswith(".json") or not name.endswith(".json"):
        meant = next((suffix for suffix in NOT_JSON if lower.endswith(suffix)), path.suffix or "(none)")
        stem = name[: -len(meant)] if lower.endswith(meant) else path.stem
        return None, f"a story is a .json file ({meant} is not read): save it as {stem}.json"
    if not KEY.match(path.stem):
        suggested = re.sub(r"[^a-z0-9_-]+", "-", path.stem.lower()).strip("-_")[:64] or "story"
        return None, BAD_NAME.format(suggested=suggested)
    try:
        return _read(path), None
    except (StoryError, OSError, UnicodeDecodeError) as error:
        return None, _problem_of(error)


def all_stories() -> tuple[list[Story], list[BrokenStory]]:
    """Every story in the folder (by file name, so a number prefix orders them), and the broken files: those
    that cannot be read, and those whose name cannot be an address (`Bad Name.json` was skipped without a word)."""
    good: list[Story] = []
    broken: list[BrokenStory] = []
    for path in _files():
        story, problem_found = check_file(path)
        if story is not None:
            good.append(story)
        else:
            broken.append(BrokenStory(path.stem, problem_found or ""))
    return good, broken + _not_json()


def _by_key(key: str) -> tuple[Story | None, str | None]:
    """The story file `key` in the stories folder, read: (its story, None), (None, what is wrong with it), or
    (None, None) when there is no such file or `key` is not a file name."""
    if not KEY.match(key or ""):
        return None, None
    path = stories_dir() / f"{key}.json"
    if not path.is_file():
        return None, None
    return check_file(path)


def problem(key: str) -> str | None:
    """What is wrong with the story file `key`, when there is one and it cannot be read; None otherwise."""
    return _by_key(key)[1]


def get(key: str) -> Story | None:
    """One story by key; None for an unknown key, a broken file, or a key that is not a file name."""
    return _by_key(key)[0]
