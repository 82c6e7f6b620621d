"""``lore:`` as the runtime holds it: every entry of every book, each with its book's
defaults already applied, and each book's own settings. Standard library only: a start
from the compiled-buddy cache unpickles it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["Lore", "LoreBook", "LoreEntry", "Role"]

#: Whose message a depth entry is.
Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class LoreEntry:
    """One entry (:class:`buddy.capabilities.lore.manifest.LoreEntryFile`), its ``null``
    fields resolved to its book's.

    Attributes:
        book: Its book's file name without ``.yaml``.
        scan: How many recent messages it scans.
        group: Its inclusion groups.
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
    whole_words: bool = False
    logic: str = "and_any"
    delay: int | None = None
    probability: int = 100
    group: tuple[str, ...] = ()
    group_weight: int = 100
    group_override: bool = False
    group_scoring: bool = False
    exclude_recursion: bool = False
    prevent_recursion: bool = False
    delay_until_recursion: int = 0
    position: str = "after_persona"
    depth: int = 4
    role: Role = "system"

    @property
    def id(self) -> str:
        """``book/name``: unique across the buddy's lore."""
        return f"{self.book}/{self.name}"


@dataclass(frozen=True, slots=True)
class LoreBook:
    """One book and its settings (:class:`buddy.capabilities.lore.manifest.LoreBookFile`);
    the defaults are a hand-written book's.

    Attributes:
        name: Its file name without ``.yaml``.
        file: The book file (``None`` for a book made in code).
        card: An imported card book's other fields, for export.
        scan, case_sensitive, whole_words, group_scoring: The defaults its entries took.
    """

    name: str
    title: str = ""
    file: Path | None = None
    card: dict[str, Any] = field(default_factory=dict)
    scan: int = 4
    scan_replies: bool = False
    scan_names: bool = False
    case_sensitive: bool = False
    whole_words: bool = False
    recursion: int = 0
    counting: str = "turns"
    token_budget: int | None = None
    group_scoring: bool = False
    macros: bool = False


@dataclass(frozen=True, slots=True)
class Lore:
    """The buddy's lore: every entry of every book, books in file-name order.

    Attributes:
        char: The buddy's title (``{{char}}`` in a book with ``macros``).
    """

    entries: tuple[LoreEntry, ...]
    books: tuple[LoreBook, ...]
    char: str = ""

    def book(self, name: str) -> LoreBook:
        """The book ``name``; a hand-written book's settings when there is none (lore
        made in code with entries only)."""
        for book in self.books:
            if book.name == name:
                return book
        return LoreBook(name)
