"""``lore:`` in ``buddy.yaml`` names a folder of lore books; each ``*.yaml`` in it is one
book, modelled here (strict; every bound in :mod:`buddy.capabilities.lore.limits`).

A book written by hand keeps its old meaning: every field added for SillyTavern's
activation rules defaults to what lore did before them (user messages only, no
speakers' names, no recursion, turns as the unit, no macros). ``null`` on an entry's ``case_sensitive``,
``whole_words``, ``scan`` and ``group_scoring`` means "as the book says".

Standard library and pydantic only: ``buddy validate`` imports it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from buddy.capabilities.lore.limits import (
    CONTENT_CHARS,
    DELAY_MAX,
    DEPTH_DEFAULT,
    DEPTH_MAX,
    ENTRIES_MAX,
    GROUP_CHARS,
    GROUP_WEIGHT,
    GROUPS_MAX,
    KEY_CHARS,
    KEYS_MAX,
    ORDER_DEFAULT,
    ORDER_RANGE,
    PATTERN_CHARS,
    PROBABILITY_MAX,
    RECURSION_MAX,
    SCAN_MESSAGES,
    TOKEN_BUDGET_MAX,
    TURNS_MAX,
)
from buddy.manifest.schema import Folder, Strict

__all__ = ["Counting", "Logic", "LoreBookFile", "LoreEntryFile", "LoreSection", "Position", "Role"]

#: ``lore:``: the folder of books, relative to the manifest that names it.
LoreSection = Folder

Key = Annotated[str, Field(min_length=1, max_length=KEY_CHARS)]
Turns = Annotated[int, Field(ge=1, le=TURNS_MAX)]
Scan = Annotated[int, Field(ge=SCAN_MESSAGES[1], le=SCAN_MESSAGES[2])]
Group = Annotated[str, Field(min_length=1, max_length=GROUP_CHARS)]
#: How ``also`` combines with a key that matched (SillyTavern's ``selectiveLogic``).
Logic = Literal["and_any", "not_all", "not_any", "and_all"]
#: Where an entry lands: before the persona text, after it, or as a message in the history.
Position = Literal["before_persona", "after_persona", "depth"]
Role = Literal["system", "user", "assistant"]
#: The unit of ``sticky``, ``cooldown`` and ``delay``.
Counting = Literal["turns", "messages"]


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
        description="With keys or patterns: words checked once a key matched (see `logic`).",
    )
    logic: Logic = Field(
        default="and_any",
        description="How `also` decides: one of them is there (and_any), not all (not_all), "
        "none (not_any), all (and_all).",
    )
    case_sensitive: bool | None = Field(default=None, description="null: as the book says.")
    whole_words: bool | None = Field(default=None, description="null: as the book says.")
    scan: Scan | None = Field(
        default=None, description="This entry's scan depth (messages); null: the book's."
    )
    always: bool = Field(default=False, description="In every prompt, with no keys needed.")
    enabled: bool = True
    order: int = Field(
        default=ORDER_DEFAULT, ge=ORDER_RANGE[0], le=ORDER_RANGE[1], description="Lower goes first."
    )
    priority: int = Field(
        default=0,
        ge=ORDER_RANGE[0],
        le=ORDER_RANGE[1],
        description="When the budget is short, higher is kept first.",
    )
    sticky: Turns | None = Field(
        default=None, description="Stays in the prompt this long after it triggered."
    )
    cooldown: Turns | None = Field(
        default=None, description="Cannot trigger again for this long after it ended."
    )
    delay: Annotated[int, Field(ge=1, le=DELAY_MAX)] | None = Field(
        default=None, description="Cannot trigger before the conversation is this long."
    )
    probability: int = Field(
        default=PROBABILITY_MAX,
        ge=0,
        le=PROBABILITY_MAX,
        description="Percent chance to go in when triggered (drawn per event).",
    )
    group: list[Group] = Field(
        default_factory=list, max_length=GROUPS_MAX, description="Inclusion groups."
    )
    group_weight: int = Field(
        default=GROUP_WEIGHT[0],
        ge=GROUP_WEIGHT[1],
        le=GROUP_WEIGHT[2],
        description="Its weight in its groups' draw.",
    )
    group_override: bool = Field(
        default=False, description="Wins its groups (the highest order among such)."
    )
    group_scoring: bool | None = Field(default=None, description="null: as the book says.")
    exclude_recursion: bool = Field(
        default=False, description="Triggered by messages only, not by other entries."
    )
    prevent_recursion: bool = Field(default=False, description="Its content triggers nothing.")
    delay_until_recursion: int = Field(
        default=0,
        ge=0,
        le=RECURSION_MAX,
        description="Triggers only in a rescan, at this recursion level or later.",
    )
    position: Position = "after_persona"
    depth: int = Field(
        default=DEPTH_DEFAULT,
        ge=0,
        le=DEPTH_MAX,
        description="With position depth: messages from the end.",
    )
    role: Role = Field(default="system", description="With position depth: whose message.")
    card: dict[str, Any] = Field(
        default_factory=dict,
        description="An imported card entry's fields that have no meaning here (kept for export).",
    )


class LoreBookFile(Strict):
    """A lore book: ``lore/<name>.yaml``."""

    title: str | None = Field(default=None, min_length=1, max_length=100)
    scan: Scan = Field(
        default=SCAN_MESSAGES[0], description="How many recent messages are scanned for keys."
    )
    scan_replies: bool = Field(
        default=False, description="The buddy's replies are scanned too (and counted in scan)."
    )
    scan_names: bool = Field(
        default=False,
        description="Each message is scanned as `Name: text`, its speaker's name first.",
    )
    case_sensitive: bool = False
    whole_words: bool = Field(
        default=False, description="A one-word key matches only as a whole word."
    )
    recursion: int = Field(
        default=0,
        ge=0,
        le=RECURSION_MAX,
        description="How many times triggered entries' content is scanned again for keys.",
    )
    counting: Counting = Field(
        default="turns", description="The unit of sticky, cooldown and delay."
    )
    token_budget: Annotated[int, Field(ge=1, le=TOKEN_BUDGET_MAX)] | None = Field(
        default=None, description="At most this many estimated tokens of this book per turn."
    )
    group_scoring: bool = Field(
        default=False, description="In a group, only the entries matching most keys compete."
    )
    macros: bool = Field(
        default=False, description="{{char}}, {{user}} and card macros are replaced per turn."
    )
    entries: list[LoreEntryFile] = Field(max_length=ENTRIES_MAX)
    card: dict[str, Any] = Field(
        default_factory=dict, description="An imported card book's other fields (for export)."
    )
