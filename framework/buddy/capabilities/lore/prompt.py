"""What persona templates see of ``lore:`` — ``lore.entries`` (``name``, ``content``,
``position``), ``lore.text`` (the contents of the entries placed before and after the
persona, joined), ``lore.before`` and ``lore.after`` (each position's). Entries placed at
a depth of the history are not in the texts: they reach the model as messages.
Standard library only."""

from __future__ import annotations

from typing import Any

from buddy.capabilities.lore.compiled import Lore
from buddy.capabilities.lore.limits import PROMPT_CHARS
from buddy.capabilities.lore.scan import SEPARATOR, LoreState, Scanned, scan

__all__ = ["prompt", "scanned_context"]


def scanned_context(scanned: Scanned) -> dict[str, Any]:
    """``lore`` in the template context for one turn's scan."""
    entries = [
        {"name": e.name, "content": e.content, "position": e.position} for e in scanned.entries
    ]
    before = [e.content for e in scanned.at("before_persona") if e.content]
    after = [e.content for e in scanned.at("after_persona") if e.content]
    return {
        "entries": entries,
        "text": SEPARATOR.join(before + after),
        "before": SEPARATOR.join(before),
        "after": SEPARATOR.join(after),
    }


def prompt(lore: Lore, example: bool) -> dict[str, Any]:
    """The entries that are always in; with ``example``, also each book's first keyed
    entry as if its first key had just been said."""
    recent: list[str] = []
    if example:
        seen: set[str] = set()
        for entry in lore.entries:
            if entry.book not in seen and entry.keys and entry.enabled and not entry.always:
                seen.add(entry.book)
                recent.append(entry.keys[0])
    return scanned_context(
        scan(lore, recent, LoreState(messages=len(recent)), PROMPT_CHARS, event="example")
    )
