"""``memory:`` compiled (:mod:`buddy.capabilities.memory.compiled`): each relation spec
found, read and checked with located errors, and the settings of automatic memory.

A relation named bare (``debt``) is ``relations/debt.yaml`` on the persona search path
(so a project can share or override one), else the spec this package ships
(``specs/debt.yaml``); any other reference is a path on the search path.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from buddy.capabilities.memory.compiled import AutoMemory, RelationSpec, SlotSpec
from buddy.capabilities.memory.manifest import MemorySection
from buddy.capabilities.memory.relations import (
    RELATION_NAME_PATTERN,
    RelationFile,
    relation_problems,
)
from buddy.compile.project import not_regular
from buddy.errors import Issue
from buddy.manifest.locate import issue_at, validated
from buddy.manifest.schema import did_you_mean, duration_seconds
from buddy.manifest.yamlio import load_document

if TYPE_CHECKING:
    from buddy.extend import SectionContext

__all__ = ["SHIPPED", "compile_memory", "shipped_names"]

#: The relation specs this package ships, found after the project's own.
SHIPPED = Path(__file__).with_name("specs")
_BARE = re.compile(RELATION_NAME_PATTERN)


def shipped_names() -> list[str]:
    """The names of the shipped relation specs."""
    return sorted(p.stem for p in SHIPPED.glob("*.yaml"))


def compile_memory(context: SectionContext) -> AutoMemory | None:
    """Automatic memory, or ``None`` when the manifest has no ``memory:``."""
    section: MemorySection | None = context.value
    if section is None:
        return None
    relations: list[RelationSpec] = []
    seen: dict[str, int] = {}
    for index, reference in enumerate(section.relations):
        spec = _relation(context, index, reference)
        if spec is None:
            continue
        if spec.name in seen:
            context.error(
                ("relations", index),
                "relation-duplicate",
                f"the relation `{spec.name}` is declared twice (also item {seen[spec.name] + 1})",
            )
            continue
        seen[spec.name] = index
        relations.append(spec)
    if section.auto and not section.relations:
        context.error(
            ("auto",),
            "memory-relations",
            "automatic memory needs at least one relation to extract",
            f"add `relations:`, e.g. [{', '.join(shipped_names()[:3])}]",
        )
    if section.budget.max_chars < section.card.max_chars:
        context.error(
            ("budget", "max_chars"),
            "memory-budget",
            f"the budget ({section.budget.max_chars}) is smaller than the person card "
            f"({section.card.max_chars}) it must hold",
            "raise `budget.max_chars` or lower `card.max_chars`",
        )
    model = None
    if section.model is not None:
        from buddy.compile.compiler import model_spec

        model = model_spec(section.model)
    return AutoMemory(
        auto=section.auto,
        model=model,
        relations=tuple(relations),
        card_chars=section.card.max_chars,
        budget_chars=section.budget.max_chars,
        wait_ms=section.wait_ms,
        asks=section.asks,
        share_entries=section.share.entries,
        share_bytes=section.share.bytes,
        origin=context.declared_in(),
    )


def _find(context: SectionContext, reference: str) -> Path | None:
    # What is on the search path, regular or not: a FIFO `relations/debt.yaml` is refused
    # by _relation, not replaced by the shipped `debt`.
    if _BARE.match(reference):
        found = context.shared(f"relations/{reference}.yaml")
        if found is not None:
            return found
        shipped = SHIPPED / f"{reference}.yaml"
        return shipped if shipped.is_file() else None
    return context.shared(reference)


def _relation(context: SectionContext, index: int, reference: str) -> RelationSpec | None:
    file = _find(context, reference)
    if file is None:
        names = shipped_names()
        context.error(
            ("relations", index),
            "relation-not-found",
            f"relation spec `{reference}` not found",
            did_you_mean(reference, names)
            or f"shipped: {', '.join(names)}; a path is looked up on: "
            + ", ".join(str(p) for p in context.search_path()),
        )
        return None
    if not file.resolve().is_relative_to(SHIPPED.resolve()):
        if not context.inside(file):
            context.report(context.outside_file(file, reference))
            return None
        kind = not_regular(file)
        if kind is not None:  # never opened: a FIFO would block the reader forever
            context.error(
                ("relations", index),
                "file-not-regular",
                f"relation spec `{reference}` is {kind}, not a regular file",
                f"{file} must be a relation spec file; replace it with an ordinary file",
            )
            return None
        context.depends_on(file)
    shown = str(file)
    doc = load_document(file, shown)
    if isinstance(doc, Issue):
        if doc.code == "yaml-not-mapping":
            doc = Issue.of_file(shown, "relation-spec", "a relation spec is a mapping")
        context.report(doc)
        return None
    parsed, issues = validated(doc, RelationFile, "relation-spec")
    for issue in issues:
        context.report(issue)
    if parsed is None:
        return None
    problems = list(relation_problems(parsed))
    for where, message in problems:
        context.report(issue_at(doc, where, "relation-spec", message))
    if problems:
        return None
    return _compiled(parsed, file.resolve())


def _compiled(spec: RelationFile, file: Path) -> RelationSpec:
    key = spec.key if spec.key is not None else [n for n, s in spec.slots.items() if s.required]
    slots = tuple(
        SlotSpec(
            name=name,
            type=slot.type,
            required=slot.required,
            title=slot.title or name,
            max_chars=slot.max_chars,
            choices=tuple(slot.choices or ()),
        )
        for name, slot in spec.slots.items()
    )
    examples: tuple[tuple[str, tuple[dict[str, Any], ...], str], ...] = tuple(
        (e.say, tuple(dict(f) for f in e.facts), e.modality) for e in spec.examples
    )
    return RelationSpec(
        name=spec.relation,
        version=spec.version,
        title=spec.title,
        note=spec.note,
        risk=spec.risk,
        slots=slots,
        value=spec.value,
        key=tuple(n for n in key if n != spec.value),
        modalities=tuple(spec.modalities),
        writers=tuple(spec.writers),
        effect=spec.effect,
        allow_negative=spec.delta.allow_negative if spec.delta else False,
        conservation=spec.delta.conservation if spec.delta else "none",
        admission=spec.admission,
        confirmation=spec.confirmation,
        conflict=spec.conflict,
        validity_seconds=None if spec.validity == "permanent" else duration_seconds(spec.validity),
        examples=examples,
        patterns=tuple((p.match, dict(p.slots), p.modality) for p in spec.patterns),
        file=file,
    )
