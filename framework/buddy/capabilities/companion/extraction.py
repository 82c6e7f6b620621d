"""One user message into the mind: its facts and its appraisal — the relations' patterns
first, the extractor model once when they found nothing or the character needs an
appraisal — held to the declared relations (:mod:`~buddy.capabilities.memory.extract`),
then each fact through its relation's policy (:mod:`~buddy.capabilities.memory.ledger`)
and the appraisal through the character's dynamics
(:mod:`~buddy.capabilities.character.state`). Keyed by the event id, so a redelivered
event applies nothing twice.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.state import Appraisal, felt, start
from buddy.capabilities.companion.mind import FELT_KEPT, HISTORY_KEPT, REPORTS_KEPT, Mind
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.extract import Extracted, from_model, from_patterns
from buddy.capabilities.memory.ledger import apply
from buddy.models.base import Message, ModelRequest

if TYPE_CHECKING:
    from buddy.models.base import Model

__all__ = ["EXTRACTED_CHARS", "apply_extracted", "asked", "patterned"]

#: How much of a message the extractor model reads.
EXTRACTED_CHARS = 2000


def patterned(
    memory: AutoMemory, character: CharacterSpec | None, text: str
) -> tuple[Extracted, bool]:
    """What the relations' patterns take from the message, and whether the extractor model
    must be asked too (the patterns found nothing, or the character needs an appraisal)."""
    wants_facts = memory.auto and bool(memory.relations)
    found = from_patterns(memory, text) if wants_facts else Extracted()
    return found, character is not None or (wants_facts and not found.facts)


async def asked(
    memory: AutoMemory, extractor: Model, prompt: str, text: str, found: Extracted
) -> Extracted:
    """``found`` with what the extractor model says of the message (held to the declared
    relations; a fact the patterns found already is not taken twice)."""
    response = await extractor.request(
        ModelRequest(system=prompt, messages=(Message("user", text[:EXTRACTED_CHARS]),))
    )
    said = from_model(memory, response.text)
    if not (memory.auto and memory.relations):
        said = replace(said, facts=())
    keys = {(f.relation, json.dumps(f.slots, sort_keys=True)) for f in found.facts}
    extra = [f for f in said.facts if (f.relation, json.dumps(f.slots, sort_keys=True)) not in keys]
    return Extracted((*found.facts, *extra), said.appraisal, (*found.dropped, *said.dropped))


def apply_extracted(
    memory: AutoMemory,
    character: CharacterSpec | None,
    mind: Mind,
    extracted: Extracted,
    now: float,
    message: str,
) -> None:
    """Apply what one message (``message``: its event id) said to ``mind``: each fact by
    its relation's policy, the appraisal to the mood once."""
    mind.dropped = [*mind.dropped, *extracted.dropped][-REPORTS_KEPT:]
    for fact in extracted.facts:
        mind.ledger, outcome = apply(memory, mind.ledger, fact, now=now, message=message)
        mind.outcomes = [*mind.outcomes, outcome][-REPORTS_KEPT:]
    if character is not None and message not in mind.felt:
        mood = mind.mood or start(character, now)
        raw = extracted.appraisal or {}
        appraisal = Appraisal(
            offence=float(raw.get("offence", 0.0)),
            apology=float(raw.get("apology", 0.0)),
            care=float(raw.get("care", 0.0)),
            explained=bool(raw.get("explained", False)),
        )
        mind.mood = m = felt(mood, character, appraisal, now)
        mind.felt = (*mind.felt, message)[-FELT_KEPT:]
        point = [round(now, 3), *(round(v, 4) for v in (m.anger, m.sadness, m.trust))]
        mind.history = [*mind.history, point][-HISTORY_KEPT:]
