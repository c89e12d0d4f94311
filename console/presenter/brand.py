"""The prospect's brand on the stage: name, initials and primary colour, carried in the stage's URL so a
prepared demo is one link to bookmark."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_NAME = "Northwind Lending"
DEFAULT_COLOR = "#0f766e"
MAX_NAME = 40
COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")
THEMES = ("light", "dark")


@dataclass(frozen=True)
class Brand:
    name: str
    initials: str
    color: str
    theme: str
    profile: str = ""  # the saved profile's slug, when the brand is one
    logo: str = ""  # the profile's uploaded logo (its digest, which versions its URL); empty: initials

    @property
    def typed_initials(self) -> str:
        """The initials as the brand form shows them: empty when they are the name's own, so that a new name typed
        brings its own (a form pre-filled with the default's "NL" gave "Acme Bank" the initials "NL")."""
        return "" if self.initials == initials_of(self.name) else self.initials

    def args(self) -> dict[str, str]:
        """The query arguments that carry this brand from one stage URL to the next (defaults left out)."""
        if self.profile:
            return {"profile": self.profile}
        out = {"brand": self.name, "color": self.color, "initials": self.initials, "theme": self.theme}
        defaults = {
            "brand": DEFAULT_NAME,
            "color": DEFAULT_COLOR,
            "initials": initials_of(self.name),
            "theme": "light",
        }
        return {k: v for k, v in out.items() if v != defaults[k]}


def initials_of(name: str) -> str:
    words = [w for w in re.split(r"\s+", name) if w[:1].isalnum()]
    return "".join(w[0] for w in words[:2]).upper() or "?"


def typed_name(args: Mapping[str, str]) -> str:
    """The company name as the URL or form spells it, its runs of spaces made one."""
    return " ".join((args.get("brand") or "").split())


def cut_name(args: Mapping[str, str]) -> str | None:
    """The typed company name when it is longer than the stage shows (`from_args` keeps its first MAX_NAME
    characters), for the presenter to be told; else None."""
    typed = typed_name(args)
    return typed if len(typed) > MAX_NAME else None


def from_args(args: Mapping[str, str]) -> Brand:
    """The brand a stage URL names; anything missing or unusable falls back to the default, never an error."""
    name = typed_name(args)[:MAX_NAME] or DEFAULT_NAME
    initials = "".join((args.get("initials") or "").split())[:3] or initials_of(name)
    color = args.get("color") or ""
    # fullmatch: `$` also matches before a final newline, and "#aabbcc\n" was kept (a 500 saving it as a profile's
    # 7-character colour on PostgreSQL).
    color = color.lower() if COLOR.fullmatch(color) else DEFAULT_COLOR
    theme = args.get("theme") if args.get("theme") in THEMES else "light"
    return Brand(name, initials, color, theme)
