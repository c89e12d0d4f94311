"""docs/operations.md's command line lists every `console` command, and only options the commands take."""

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
