"""docs/operations.md's command line lists every `console` command, and only options the commands take; every
`console …` command line elsewhere in the docs names a command that exists, with options it takes."""

from __future__ import annotations

import re
from pathlib import Path

import click

from console.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def documented() -> dict[str, str]:
    """Each documented line's command path (`keys roll`) and the rest of its line."""
    section = DOC.read_text().split("## Command line", 1)[1]
    block = section.split("```", 2)[1]
    lines = {}
    for line in block.splitlines():
        match = re.match(r"console ((?:[a-z]+ ?)+?)(?= [A-Z\[-]|\s{2,}|$)(.*)", line)
        if match:
            lines.setdefault(match.group(1).strip(), "")
            lines[match.group(1).strip()] += match.group(2)
    return lines


def commands(group: click.Group = main, prefix: str = "") -> dict[str, click.Command]:
    """Every leaf command of the CLI by its path."""
    found = {}
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            found.update(commands(command, path + " "))
        else:
            found[path] = command
    return found


def test_every_command_is_documented_and_every_documented_one_exists():
    docs, cli = documented(), commands()
    assert {"run", "keys roll", "listen", "trigger"} <= set(docs)  # the parsing still finds lines
    assert sorted(set(cli) - set(docs)) == [], "commands missing from docs/operations.md's command line"
    assert sorted(set(docs) - set(cli)) == [], "documented commands the CLI does not have"


def test_every_documented_option_is_one_the_command_takes():
    cli = commands()
    for path, rest in documented().items():
        taken = {opt for param in cli[path].params for opt in (*param.opts, *param.secondary_opts)}
        named = set(re.findall(r"(--[a-z][a-z-]*)", rest))
        assert named <= taken, f"console {path}: documented options it does not take: {sorted(named - taken)}"


ROOT = DOC.parents[1]
# operations.md's own command lines are the reference the tests above read; its other blocks show output too.
DOCUMENTS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p != DOC)]
# `console …` in a code span that is not a command line: training's grid label for Link tokens made only by the
# console.
NOT_COMMANDS = {"console only"}


def command_lines(path: Path) -> list[str]:
    """Each `console …` command written in a document's code spans and fenced blocks, up to its line's end."""
    text = path.read_text()
    fenced = re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL))
    found = []
    for piece in [*fenced, *spans]:
        for line in piece.splitlines():
            found += [m.group(1) for m in re.finditer(r"(?:^|[\s/(])(console(?: +[^\s`;|&)]+)+)", line)]
    return [line for line in found if line not in NOT_COMMANDS]


def resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    """The command the words name (`keys roll ID` is `keys roll`), and the words after it."""
    command: click.Command = main
    while words and isinstance(command, click.Group) and re.fullmatch(r"[a-z]+", words[0]):
        assert words[0] in command.commands, f"no command `{words[0]}` under `{command.name}`"
        command, words = command.commands[words[0]], words[1:]
    return command, words


def test_every_console_command_in_the_docs_exists_with_the_options_it_takes():
    lines = {line: document for document in DOCUMENTS for line in command_lines(document)}
    assert (
        "console keys roll ID --grace 1h" in lines and "console stories check" in lines
    )  # the parsing works
    wrong = []
    for line, document in sorted(lines.items()):
        try:
            command, rest = resolve(line.split()[1:])
        except AssertionError as error:
            wrong.append(f"{document.name}: {line}: {error}")
            continue
        taken = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
        named = re.findall(r"(?<![\w/.-])(--[a-z][a-z-]*)", " ".join(rest))  # `[--json]` too, not a URL's
        wrong += [f"{document.name}: {line}: {option}" for option in named if option not in taken]
    assert not wrong, "command lines in the docs the CLI does not take:\n" + "\n".join(wrong)


def test_every_make_target_in_the_docs_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, flags=re.MULTILINE))
    wrong = []
    for document in [*DOCUMENTS, DOC, ROOT / "BENCHMARKS.md"]:
        text = document.read_text()
        fenced = re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
        spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL))
        named = {
            m for piece in [*fenced, *spans] for m in re.findall(r"(?:^|[\s;&(])make ([a-z][\w-]*)", piece)
        }
        wrong += [f"{document.name}: make {target}" for target in sorted(named - targets)]
    assert {"run", "test", "test-fast", "coverage"} <= targets
    assert not wrong, "make targets the docs name that the Makefile does not have:\n" + "\n".join(wrong)
