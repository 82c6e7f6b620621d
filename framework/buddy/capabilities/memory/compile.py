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

from buddy.capabilities.datafiles import DataFiles
from buddy.capabilities.memory.limits import RELATION_NAME_PATTERN
from buddy.manifest.schema import duration_seconds

if TYPE_CHECKING:
    from buddy.capabilities.memory.compiled import AutoMemory, RelationSpec
    from buddy.capabilities.memory.manifest import MemorySection
    from buddy.capabilities.memory.relations import RelationFile
    from buddy.extend import SectionContext
    from buddy.manifest.document import Document

__all__ = ["SHIPPED", "compile_memory", "shipped_names"]

#: The relation specs this package ships, found after the project's own.
SHIPPED = Path(__file__).with_name("specs")
RELATION_FILES = DataFiles(
    "relations",
    SHIPPED,
    "relation spec",
    "a relation spec",
    re.compile(RELATION_NAME_PATTERN),
    "relation-not-found",
    "relation-spec",
    listed="shipped",
)


def shipped_names() -> list[str]:
    """The names of the shipped relation specs."""
    return RELATION_FILES.shipped_names()


def compile_memory(context: SectionContext) -> AutoMemory | None:
    """Automatic memory, or ``None`` when the manifest has no ``memory:``."""
    section: MemorySection | None = context.value
    if section is None:
        return None
    from buddy.capabilities.memory.compiled import AutoMemory

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


def _relation(context: SectionContext, index: int, reference: str) -> RelationSpec | None:
    def read(doc: Document, file: Path) -> RelationSpec | None:
        # Imported here: a spec kept from the last compile needs neither (nor `regex`).
        from buddy.capabilities.memory.relations import RelationFile, relation_problems

        parsed = RELATION_FILES.parse(context, doc, RelationFile, relation_problems)
        return None if parsed is None else _compiled(parsed, file)

    where = ("relations", index)
    return RELATION_FILES.compiled(context, reference, where, shipped_names(), read)


def _compiled(spec: RelationFile, file: Path) -> RelationSpec:
    from buddy.capabilities.memory.compiled import RelationSpec, SlotSpec, SpecPattern
    from buddy.capabilities.memory.patterns import expanded, joined

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
    matches = [expanded(p.match, spec.words) for p in spec.patterns]
    either, inside = joined(matches)
    patterns = tuple(
        SpecPattern(
            match,
            dict(p.slots),
            p.modality,
            p.negative,
            p.amends,
            None if p.if_said is None else expanded(p.if_said, spec.words),
            None if p.unless_said is None else expanded(p.unless_said, spec.words),
            within,
        )
        for p, match, within in zip(spec.patterns, matches, inside, strict=True)
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
        patterns=patterns,
        file=file,
        either=either,
    )
