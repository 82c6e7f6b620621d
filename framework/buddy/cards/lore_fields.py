"""The lore fields of an entry and a book, where SillyTavern keeps each, and their
defaults (the tables :mod:`buddy.cards.lore` imports with and :mod:`buddy.cards.lore_export`
exports with)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from buddy.capabilities.lore.limits import (
    DEPTH_DEFAULT,
    GROUP_WEIGHT,
    ORDER_DEFAULT,
    PROBABILITY_MAX,
    RECURSION_MAX,
    SCAN_MESSAGES,
)

__all__ = [
    "BOOK_DEFAULTS",
    "ENTRY_DEFAULTS",
    "FIELDS",
    "LOGIC",
    "ROLES",
    "ST_BOOK",
    "Shape",
    "entry_items",
    "get",
    "normal_book",
    "normal_entry",
]

#: ``book``: a character_book / lorebook_v3 ``data``; ``wi``: a SillyTavern World Info file.
Shape = Literal["book", "wi"]

LOGIC = ("and_any", "not_all", "not_any", "and_all")
"""``logic`` by SillyTavern's ``selectiveLogic`` number (world-info.js ``world_info_logic``)."""
ROLES = ("system", "user", "assistant")
"""``role`` by SillyTavern's number (``extension_prompt_roles``)."""

#: Each lore entry field's place: (World Info path, character_book path).
FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "content": (("content",), ("content",)),
    "keys": (("key",), ("keys",)),
    "also": (("keysecondary",), ("secondary_keys",)),
    "selective": (("selective",), ("selective",)),
    "logic": (("selectiveLogic",), ("extensions", "selectiveLogic")),
    "always": (("constant",), ("constant",)),
    "enabled": (("disable",), ("enabled",)),  # WI: negated
    "order": (("order",), ("insertion_order",)),
    "position": (("position",), ("extensions", "position")),
    "depth": (("depth",), ("extensions", "depth")),
    "role": (("role",), ("extensions", "role")),
    "case_sensitive": (("caseSensitive",), ("extensions", "case_sensitive")),
    "whole_words": (("matchWholeWords",), ("extensions", "match_whole_words")),
    "scan": (("scanDepth",), ("extensions", "scan_depth")),
    "sticky": (("sticky",), ("extensions", "sticky")),
    "cooldown": (("cooldown",), ("extensions", "cooldown")),
    "delay": (("delay",), ("extensions", "delay")),
    "probability": (("probability",), ("extensions", "probability")),
    "use_probability": (("useProbability",), ("extensions", "useProbability")),
    "group": (("group",), ("extensions", "group")),
    "group_weight": (("groupWeight",), ("extensions", "group_weight")),
    "group_override": (("groupOverride",), ("extensions", "group_override")),
    "group_scoring": (("useGroupScoring",), ("extensions", "use_group_scoring")),
    "exclude_recursion": (("excludeRecursion",), ("extensions", "exclude_recursion")),
    "prevent_recursion": (("preventRecursion",), ("extensions", "prevent_recursion")),
    "delay_until_recursion": (
        ("delayUntilRecursion",),
        ("extensions", "delay_until_recursion"),
    ),
}

#: A lore entry's defaults (what an absent field means), in the order fields are written.
ENTRY_DEFAULTS: dict[str, Any] = {
    "keys": [],
    "patterns": [],
    "also": [],
    "logic": "and_any",
    "always": False,
    "enabled": True,
    "order": ORDER_DEFAULT,
    "priority": 0,
    "position": "after_persona",
    "depth": DEPTH_DEFAULT,
    "role": "system",
    "case_sensitive": None,
    "whole_words": None,
    "scan": None,
    "sticky": None,
    "cooldown": None,
    "delay": None,
    "probability": PROBABILITY_MAX,
    "group": [],
    "group_weight": GROUP_WEIGHT[0],
    "group_override": False,
    "group_scoring": None,
    "exclude_recursion": False,
    "prevent_recursion": False,
    "delay_until_recursion": 0,
    "card": {},
}
#: A lore book's defaults.
BOOK_DEFAULTS: dict[str, Any] = {
    "title": None,
    "scan": SCAN_MESSAGES[0],
    "scan_replies": False,
    "scan_names": False,
    "case_sensitive": False,
    "whole_words": False,
    "recursion": 0,
    "counting": "turns",
    "token_budget": None,
    "group_scoring": False,
    "macros": False,
    "card": {},
}
#: An imported book's settings: SillyTavern's shipped ones (default/content/settings.json:
#: world_info_depth 2, world_info_include_names true, world_info_recursive true,
#: world_info_match_whole_words true, world_info_case_sensitive false).
ST_BOOK: dict[str, Any] = {
    "scan": 2,
    "scan_replies": True,
    "scan_names": True,
    "case_sensitive": False,
    "whole_words": True,
    "recursion": RECURSION_MAX,
    "counting": "messages",
    "token_budget": None,
    "group_scoring": False,
    "macros": True,
}


def get(entry: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at ``path`` in ``entry`` (``None`` when absent)."""
    value: Any = entry
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def entry_items(book: Mapping[str, Any], shape: Shape) -> Iterator[tuple[Any, Any]]:
    """``(list index or uid, entry)`` for each entry of ``book``."""
    entries = book.get("entries")
    if shape == "wi" and isinstance(entries, Mapping):
        yield from entries.items()
    elif isinstance(entries, list):
        yield from enumerate(entries)


def normal_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """``entry`` with every field, defaults filled in (two entries mean the same when
    these are equal)."""
    out = {"name": entry.get("name"), "content": entry.get("content")}
    out.update({k: entry.get(k, v) for k, v in ENTRY_DEFAULTS.items()})
    if out["position"] != "depth":
        out["depth"], out["role"] = DEPTH_DEFAULT, "system"  # they mean nothing then
    return out


def normal_book(book: Mapping[str, Any]) -> dict[str, Any]:
    """``book``'s settings with defaults filled in (not its entries)."""
    return {k: book.get(k, v) for k, v in BOOK_DEFAULTS.items()}
