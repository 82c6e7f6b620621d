"""``lore:`` compiled (:mod:`buddy.capabilities.lore.compiled`): every ``*.yaml`` book of
the folder it names, read and checked with located errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from buddy.capabilities.lore.compiled import Lore, LoreEntry
from buddy.capabilities.lore.limits import ENTRIES_MAX
from buddy.capabilities.lore.manifest import LoreBookFile
from buddy.capabilities.memory.patterns import pattern_problem
from buddy.compile.project import searched
from buddy.errors import Issue
from buddy.manifest.locate import issue_at, validated
from buddy.manifest.yamlio import load_document

if TYPE_CHECKING:
    from buddy.extend import SectionContext

__all__ = ["compile_lore"]


def compile_lore(context: SectionContext) -> Lore | None:
    """The lore, or ``None`` when the manifest has no ``lore:``."""
    if context.value is None:
        return None
    folder = context.folder()
    if folder is None:
        return None
    entries: list[LoreEntry] = []
    books = []
    for file in sorted(folder.glob("*.yaml")):
        # Not only regular files: a FIFO book is refused by the reader, not skipped.
        if not searched(file.name) or file.is_dir() or not file.exists():
            continue
        if not context.inside(file):
            context.report(context.outside_file(file, file.name))
            continue
        shown = str(file)
        doc = load_document(file, shown)
        context.depends_on(file)
        if isinstance(doc, Issue):
            context.report(doc.coded("lore-book") if doc.code == "yaml-not-mapping" else doc)
            continue
        book, issues = validated(doc, LoreBookFile, "lore-book")
        for issue in issues:
            context.report(issue)
        if book is None:
            continue
        problems = False
        names: dict[str, int] = {}
        for index, entry in enumerate(book.entries):
            where = ("entries", index)
            if entry.name in names:
                context.report(
                    issue_at(
                        doc,
                        (*where, "name"),
                        "lore-book",
                        f"another entry of this book is named {entry.name!r} "
                        f"(entry {names[entry.name] + 1})",
                    )
                )
                problems = True
            names.setdefault(entry.name, index)
            if not entry.always and not entry.keys and not entry.patterns:
                context.report(
                    issue_at(
                        doc,
                        where,
                        "lore-book",
                        f"the entry {entry.name!r} never triggers: give it `keys`, "
                        "`patterns`, or `always: true`",
                    )
                )
                problems = True
            for at, pattern in enumerate(entry.patterns):
                problem = pattern_problem(pattern)
                if problem is not None:
                    context.report(issue_at(doc, (*where, "patterns", at), "lore-book", problem))
                    problems = True
        if problems:
            continue
        name = file.stem
        books.append((name, book.title or name, file.resolve(), dict(book.card)))
        entries.extend(
            LoreEntry(
                book=name,
                name=e.name,
                content=e.content,
                keys=tuple(e.keys),
                patterns=tuple(e.patterns),
                also=tuple(e.also),
                case_sensitive=e.case_sensitive,
                always=e.always,
                enabled=e.enabled,
                order=e.order,
                priority=e.priority,
                sticky=e.sticky,
                cooldown=e.cooldown,
                scan=book.scan,
                card=dict(e.card),
            )
            for e in book.entries
        )
    if len(entries) > ENTRIES_MAX:
        context.error(
            (),
            "lore-too-many",
            f"the lore has {len(entries)} entries; at most {ENTRIES_MAX}",
            "merge or drop entries: every one is scanned every turn",
        )
    return Lore(tuple(entries), tuple(books))
