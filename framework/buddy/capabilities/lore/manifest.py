"""``lore:`` in ``buddy.yaml`` names a folder of lore books; each ``*.yaml`` in it is one
book, modelled here (strict; every bound in :mod:`buddy.capabilities.lore.limits`).

Standard library and pydantic only: ``buddy validate`` imports it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from buddy.capabilities.lore.limits import (
    CONTENT_CHARS,
    ENTRIES_MAX,
    KEY_CHARS,
    KEYS_MAX,
    ORDER_DEFAULT,
    PATTERN_CHARS,
    SCAN_MESSAGES,
    TURNS_MAX,
)
from buddy.manifest.schema import Folder, Strict

__all__ = ["LoreBookFile", "LoreEntryFile", "LoreSection"]

#: ``lore:``: the folder of books, relative to the manifest that names it.
LoreSection = Folder

Key = Annotated[str, Field(min_length=1, max_length=KEY_CHARS)]
Turns = Annotated[int, Field(ge=1, le=TURNS_MAX)]


class LoreEntryFile(Strict):
    """One entry of a book."""

    name: str = Field(min_length=1, max_length=100, description="Unique within the book.")
    content: str = Field(
        min_length=1, max_length=CONTENT_CHARS, description="What the model reads."
    )
    keys: list[Key] = Field(
        default_factory=list,
        max_length=KEYS_MAX,
        description="Words: the entry is triggered when a recent message contains one.",
    )
    patterns: list[Annotated[str, Field(min_length=1, max_length=PATTERN_CHARS)]] = Field(
        default_factory=list,
        max_length=KEYS_MAX,
        description="Regular expressions (Python syntax), as keys.",
    )
    also: list[Key] = Field(
        default_factory=list,
        max_length=KEYS_MAX,
        description="With keys or patterns: one of these words must be there too.",
    )
    case_sensitive: bool = False
    always: bool = Field(default=False, description="In every prompt, with no keys needed.")
    enabled: bool = True
    order: int = Field(default=ORDER_DEFAULT, ge=-10000, le=10000, description="Lower goes first.")
    priority: int = Field(
        default=0,
        ge=-10000,
        le=10000,
        description="When the budget is short, higher is kept first.",
    )
    sticky: Turns | None = Field(
        default=None, description="Stays in the prompt this many turns after it triggered."
    )
    cooldown: Turns | None = Field(
        default=None, description="Cannot trigger again for this many turns after it ended."
    )
    card: dict[str, Any] = Field(
        default_factory=dict,
        description="An imported card entry's fields that have no meaning here (kept for export).",
    )


class LoreBookFile(Strict):
    """A lore book: ``lore/<name>.yaml``."""

    title: str | None = Field(default=None, min_length=1, max_length=100)
    scan: int = Field(
        default=SCAN_MESSAGES[0],
        ge=SCAN_MESSAGES[1],
        le=SCAN_MESSAGES[2],
        description="How many recent messages are scanned for keys.",
    )
    entries: list[LoreEntryFile] = Field(max_length=ENTRIES_MAX)
    card: dict[str, Any] = Field(
        default_factory=dict, description="An imported card book's other fields (for export)."
    )
