"""What ``buddy render`` shows of ``lore:``: every book and its entries with their keys,
triggers and content, so a review sees what a changed entry puts into the prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from buddy.capabilities.lore.compiled import Lore
from buddy.compile.render import json_block, relative

__all__ = ["markdown_lore", "render_lore"]


def render_lore(lore: Lore, root: Path) -> list[dict[str, Any]]:
    """The ``lore`` part of the compiled view: one item per book."""
    shown = []
    for name, title, file, _ in lore.books:
        entries = []
        for e in lore.entries:
            if e.book != name:
                continue
            entry: dict[str, Any] = {"name": e.name}
            for key in ("keys", "patterns", "also"):
                if getattr(e, key):
                    entry[key] = list(getattr(e, key))
            for key in ("always", "case_sensitive"):
                if getattr(e, key):
                    entry[key] = True
            if not e.enabled:
                entry["enabled"] = False
            entry |= {"order": e.order, "priority": e.priority}
            for key in ("sticky", "cooldown"):
                if getattr(e, key) is not None:
                    entry[key] = getattr(e, key)
            entry["content"] = e.content
            entries.append(entry)
        scan = next((e.scan for e in lore.entries if e.book == name), None)
        shown.append(
            {
                "book": name,
                "title": title,
                "file": relative(file, root),
                "scan": scan,
                "entries": entries,
            }
        )
    return shown


def markdown_lore(shown: list[dict[str, Any]]) -> list[str]:
    """Each book under its own heading, its entries as JSON."""
    out: list[str] = []
    for book in shown:
        out.append(
            f"### book `{book['book']}` · {book['title']} · {len(book['entries'])} entries\n"
        )
        out.append(json_block({k: v for k, v in book.items() if k not in ("book", "title")}))
    return out
