"""``lore:`` as the runtime holds it: every enabled entry of every book, with its book's
scan depth. Standard library only: a start from the compiled-buddy cache unpickles it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Lore", "LoreEntry"]


@dataclass(frozen=True, slots=True)
class LoreEntry:
    """One entry (:class:`buddy.capabilities.lore.manifest.LoreEntryFile`).

    Attributes:
        book: Its book's file name without ``.yaml``.
        scan: How many recent messages its book scans.
        card: An imported card entry's other fields, for export.
    """

    book: str
    name: str
    content: str
    keys: tuple[str, ...]
    patterns: tuple[str, ...]
    also: tuple[str, ...]
    case_sensitive: bool
    always: bool
    enabled: bool
    order: int
    priority: int
    sticky: int | None
    cooldown: int | None
    scan: int
    card: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """``book/name``: unique across the buddy's lore."""
        return f"{self.book}/{self.name}"


@dataclass(frozen=True, slots=True)
class Lore:
    """The buddy's lore: every entry of every book, books in file-name order.

    Attributes:
        books: ``(name, title, file, card fields)`` of each book.
    """

    entries: tuple[LoreEntry, ...]
    books: tuple[tuple[str, str, Path, dict[str, Any]], ...]
