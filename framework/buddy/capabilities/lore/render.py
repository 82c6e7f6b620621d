"""What ``buddy render`` shows of ``lore:``: every book and its entries with their keys,
triggers and content, so a review sees what a changed entry puts into the prompt. A
setting shows only where it differs from its default (an entry's, from its book's), so a
hand-written book renders as it did before SillyTavern's fields existed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from buddy.capabilities.lore.compiled import Lore, LoreBook, LoreEntry
from buddy.compile.render import json_block, relative

__all__ = ["markdown_lore", "render_lore"]

#: Book settings shown when they differ from a hand-written book's.
_BOOK = LoreBook("")
_BOOK_SETTINGS = (
    "scan_replies",
    "scan_names",
    "case_sensitive",
    "whole_words",
    "recursion",
    "counting",
    "token_budget",
    "group_scoring",
    "macros",
)
#: Entry fields shown when they differ from an entry's default, in this order.
_DEFAULTS: dict[str, Any] = {
    "logic": "and_any",
    "delay": None,
    "probability": 100,
    "group": (),
    "group_weight": 100,
    "group_override": False,
    "exclude_recursion": False,
    "prevent_recursion": False,
    "delay_until_recursion": 0,
    "position": "after_persona",
}


def render_lore(lore: Lore, root: Path) -> list[dict[str, Any]]:
    """The ``lore`` part of the compiled view: one item per book."""
    shown = []
    for book in lore.books:
        entries = [_entry(e, book) for e in lore.entries if e.book == book.name]
        item: dict[str, Any] = {
            "book": book.name,
            "title": book.title,
            "file": relative(book.file, root) if book.file is not None else None,
            "scan": book.scan,
        }
        for key in _BOOK_SETTINGS:
            if getattr(book, key) != getattr(_BOOK, key):
                item[key] = getattr(book, key)
        shown.append(item | {"entries": entries})
    return shown


def _entry(e: LoreEntry, book: LoreBook) -> dict[str, Any]:
    """One entry as shown: its name, triggers, settings that are not the defaults, order
    and priority, timed effects, placement and content."""
    entry: dict[str, Any] = {"name": e.name}
    for key in ("keys", "patterns", "also"):
        if getattr(e, key):
            entry[key] = list(getattr(e, key))
    if e.always:
        entry["always"] = True
    for key in ("case_sensitive", "whole_words", "group_scoring"):
        if getattr(e, key) != getattr(book, key):
            entry[key] = getattr(e, key)
    if e.scan != book.scan:
        entry["scan"] = e.scan
    if not e.enabled:
        entry["enabled"] = False
    entry |= {"order": e.order, "priority": e.priority}
    for key in ("sticky", "cooldown"):
        if getattr(e, key) is not None:
            entry[key] = getattr(e, key)
    for key, default in _DEFAULTS.items():
        value = getattr(e, key)
        if value != default:
            entry[key] = list(value) if isinstance(value, tuple) else value
    if e.position == "depth":
        entry |= {"depth": e.depth, "role": e.role}
    entry["content"] = e.content
    return entry


def markdown_lore(shown: list[dict[str, Any]]) -> list[str]:
    """Each book under its own heading, its entries as JSON."""
    out: list[str] = []
    for book in shown:
        out.append(
            f"### book `{book['book']}` · {book['title']} · {len(book['entries'])} entries\n"
        )
        out.append(json_block({k: v for k, v in book.items() if k not in ("book", "title")}))
    return out
