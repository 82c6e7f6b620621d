"""``memory:`` as the runtime holds it: the relation specs resolved from their files, and
the settings of automatic memory with every default filled in. Standard library only
(and the model reference): a start from the compiled-buddy cache unpickles these."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from buddy.models.base import ModelSpec

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["AutoMemory", "RelationSpec", "SlotSpec", "SpecPattern", "declared"]


@dataclass(frozen=True, slots=True)
class SlotSpec:
    """One slot of a relation (:class:`buddy.capabilities.memory.relations.Slot`)."""

    name: str
    type: str
    required: bool
    title: str
    max_chars: int | None = None
    choices: tuple[str, ...] = ()


class SpecPattern(NamedTuple):
    """One pattern of a relation spec, its word lists put in.

    Attributes:
        match: The regular expression searched in each clause.
        slots: The slots it fixes.
        modality: ``asserted`` or ``request``.
        negative: The value slot's number is taken negative (a repayment).
        amends: It fills slots of the fact an earlier clause took for the relation.
        if_said: It counts only in a message where this is found.
        unless_said: It counts only in a message where this is not found.
        joined: It is in its spec's ``either``: a clause that is not found in needs no
            search for it.
    """

    match: str
    slots: dict[str, Any]
    modality: str = "asserted"
    negative: bool = False
    amends: bool = False
    if_said: str | None = None
    unless_said: str | None = None
    joined: bool = False


@dataclass(frozen=True, slots=True)
class RelationSpec:
    """A relation spec, resolved: every default filled in, its file for review.

    Attributes:
        validity_seconds: How long a fact holds; ``None``: permanently.
        examples: ``(say, facts, modality)`` for the extractor.
        patterns: Its patterns (:class:`SpecPattern`), in the file's order.
        either: The ``match`` of its patterns that can be joined, in one expression
            (:func:`~buddy.capabilities.memory.patterns.either`), searched in a clause
            first: a clause it is not found in has none of them to try. ``None``: fewer
            than two can be joined, and each is searched.
    """

    name: str
    version: int
    title: str
    note: str
    risk: str
    slots: tuple[SlotSpec, ...]
    value: str
    key: tuple[str, ...]
    modalities: tuple[str, ...]
    writers: tuple[str, ...]
    effect: str
    allow_negative: bool
    conservation: str
    admission: str
    confirmation: str
    conflict: str
    validity_seconds: int | None
    examples: tuple[tuple[str, tuple[dict[str, Any], ...], str], ...]
    patterns: tuple[SpecPattern, ...]
    file: Path
    either: str | None = None

    def slot(self, name: str) -> SlotSpec:
        """The slot called ``name``.

        Raises:
            KeyError: No such slot.
        """
        for slot in self.slots:
            if slot.name == name:
                return slot
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class AutoMemory:
    """Automatic memory: what is extracted, by which model, and how much of the prompt and
    of the platform's memory it may take.

    Attributes:
        auto: Extract from every user message (``False``: the section declares relations
            for review only, nothing is extracted).
        model: The extractor's model; ``None``: the buddy's own.
        relations: The relation specs, in the manifest's order.
        card_chars: The person card's length at most.
        budget_chars: What the companion layer adds to the system prompt, at most.
        wait_ms: How long a reply may wait for its message's extraction.
        asks: Facts awaiting confirmation per conversation, at most.
        share_entries: The layer's entries of the conversation's platform memory, at most.
        share_bytes: Its bytes of text, at most.
        origin: The manifest file that wrote ``memory:``.
    """

    auto: bool
    model: ModelSpec | None
    relations: tuple[RelationSpec, ...]
    card_chars: int
    budget_chars: int
    wait_ms: int
    asks: int
    share_entries: int
    share_bytes: int
    origin: Path | None = None

    def relation(self, name: str) -> RelationSpec | None:
        """The relation called ``name``, if declared."""
        return next((r for r in self.relations if r.name == name), None)


def declared(blueprint: Blueprint) -> AutoMemory | None:
    """The ``memory:`` section of ``blueprint`` (automatic memory), or ``None``."""
    value: AutoMemory | None = blueprint.sections.get("memory")
    return value
