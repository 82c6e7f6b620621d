"""``lore:`` compiled (:mod:`buddy.capabilities.lore.compiled`): every ``*.yaml`` book of
the folder it names, read and checked with located errors, each entry's ``null`` fields
resolved to its book's defaults."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from buddy.capabilities.lore.limits import ENTRIES_MAX
from buddy.capabilities.lore.manifest import LoreBookFile, LoreEntryFile
from buddy.compile.project import searched
from buddy.errors import Issue
from buddy.manifest.document import Document
from buddy.manifest.locate import issue_at, validated
from buddy.manifest.yamlio import load_document

if TYPE_CHECKING:
    from buddy.capabilities.lore.compiled import Lore, LoreBook, LoreEntry
    from buddy.extend import SectionContext

__all__ = ["compile_lore"]


def compile_lore(context: SectionContext) -> Lore | None:
    """The lore, or ``None`` when the manifest has no ``lore:``."""
    if context.value is None:
        return None
    from buddy.capabilities.lore.compiled import Lore  # only for a buddy with lore

    folder = context.folder()
    if folder is None:
        return None
    entries: list[LoreEntry] = []
    books: list[LoreBook] = []
    for file in sorted(folder.glob("*.yaml")):
        # Not only regular files: a FIFO book is refused by the reader, not skipped.
        if not searched(file.name) or file.is_dir() or not file.exists():
            continue
        if not context.inside(file):
            context.report(context.outside_file(file, file.name))
            continue
        read = _read(context, file)
        if read is None:
            continue
        book, settings = read
        books.append(settings)
        entries.extend(_entry(settings, e) for e in book.entries)
    if len(entries) > ENTRIES_MAX:
        context.error(
            (),
            "lore-too-many",
            f"the lore has {len(entries)} entries; at most {ENTRIES_MAX}",
            "merge or drop entries: every one is scanned every turn",
        )
    return Lore(tuple(entries), tuple(books), _title(context.doc))


def _read(context: SectionContext, file: Path) -> tuple[LoreBookFile, LoreBook] | None:
    """The book in ``file`` and its settings, or ``None`` (its problems reported)."""
    doc = load_document(file, str(file))
    context.depends_on(file)
    if isinstance(doc, Issue):
        context.report(doc.coded("lore-book") if doc.code == "yaml-not-mapping" else doc)
        return None
    book, issues = validated(doc, LoreBookFile, "lore-book")
    for issue in issues:
        context.report(issue)
    if book is None:
        return None
    problems = list(_problems(doc, book))
    for issue in problems:
        context.report(issue)
    if problems:
        return None
    from buddy.capabilities.lore.compiled import LoreBook

    name = file.stem
    settings = LoreBook(
        name=name,
        title=book.title or name,
        file=file.resolve(),
        card=dict(book.card),
        scan=book.scan,
        scan_replies=book.scan_replies,
        scan_names=book.scan_names,
        case_sensitive=book.case_sensitive,
        whole_words=book.whole_words,
        recursion=book.recursion,
        counting=book.counting,
        token_budget=book.token_budget,
        group_scoring=book.group_scoring,
        macros=book.macros,
    )
    return book, settings


def _problems(doc: Document, book: LoreBookFile) -> Iterator[Issue]:
    """What the models cannot see: names twice, entries that can never trigger, patterns
    that do not compile or surely backtrack."""
    from buddy.capabilities.memory.patterns import pattern_problem

    names: dict[str, int] = {}
    for index, entry in enumerate(book.entries):
        where = ("entries", index)
        if entry.name in names:
            yield issue_at(
                doc,
                (*where, "name"),
                "lore-book",
                f"another entry of this book is named {entry.name!r} "
                f"(entry {names[entry.name] + 1})",
            )
        names.setdefault(entry.name, index)
        if entry.enabled and not entry.always and not entry.keys and not entry.patterns:
            yield issue_at(
                doc,
                where,
                "lore-book",
                f"the entry {entry.name!r} never triggers: give it `keys`, "
                "`patterns`, or `always: true` (or `enabled: false`)",
            )
        if entry.delay_until_recursion and not book.recursion:
            # Its levels are reached only by rescans, and this book never rescans.
            yield issue_at(
                doc,
                (*where, "delay_until_recursion"),
                "lore-book",
                f"the entry {entry.name!r} never triggers: `delay_until_recursion` waits "
                "for a rescan, and the book has `recursion: 0`",
                "give the book `recursion: 1` or more, or drop `delay_until_recursion`",
            )
        for at, pattern in enumerate(entry.patterns):
            problem = pattern_problem(pattern)
            if problem is not None:
                yield issue_at(doc, (*where, "patterns", at), "lore-book", problem)


def _entry(book: LoreBook, e: LoreEntryFile) -> LoreEntry:
    """``e`` as the runtime holds it, its ``null`` fields the book's."""
    from buddy.capabilities.lore.compiled import LoreEntry

    return LoreEntry(
        book=book.name,
        name=e.name,
        content=e.content,
        keys=tuple(e.keys),
        patterns=tuple(e.patterns),
        also=tuple(e.also),
        case_sensitive=book.case_sensitive if e.case_sensitive is None else e.case_sensitive,
        always=e.always,
        enabled=e.enabled,
        order=e.order,
        priority=e.priority,
        sticky=e.sticky,
        cooldown=e.cooldown,
        scan=book.scan if e.scan is None else e.scan,
        card=dict(e.card),
        whole_words=book.whole_words if e.whole_words is None else e.whole_words,
        logic=e.logic,
        delay=e.delay,
        probability=e.probability,
        group=tuple(e.group),
        group_weight=e.group_weight,
        group_override=e.group_override,
        group_scoring=book.group_scoring if e.group_scoring is None else e.group_scoring,
        exclude_recursion=e.exclude_recursion,
        prevent_recursion=e.prevent_recursion,
        delay_until_recursion=e.delay_until_recursion,
        position=e.position,
        depth=e.depth,
        role=e.role,
    )


def _title(doc: Document) -> str:
    """The buddy's title as the blueprint has it (``{{char}}``): ``title``, else ``name``."""
    data = doc.data if isinstance(doc.data, dict) else {}
    title = data.get("title") or data.get("name")
    return title if isinstance(title, str) else ""
