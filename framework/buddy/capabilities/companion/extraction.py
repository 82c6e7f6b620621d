"""One user message into the mind: its facts and its appraisal — the relations' and the
character's appraisal patterns first, the extractor model once when they found nothing —
held to the declared relations (:mod:`~buddy.capabilities.memory.extract`),
then each fact through its relation's policy (:mod:`~buddy.capabilities.memory.ledger`)
and the appraisal through the character's dynamics
(:mod:`~buddy.capabilities.character.state`). Keyed by the event id, so a redelivered
event applies nothing twice. In a group a fact's ``user`` is the member who sent the
message, and the appraisal moves the mood toward them alone.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.state import Appraisal, felt, start
from buddy.capabilities.companion.mind import (
    FELT_KEPT,
    GROUP_HISTORY_KEPT,
    HISTORY_KEPT,
    REPORTS_KEPT,
    USER,
    Mind,
)
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.extract import Extracted, from_model, from_patterns
from buddy.capabilities.memory.ledger import apply, as_member
from buddy.models.base import Message, ModelRequest

if TYPE_CHECKING:
    from buddy.models.base import Model

__all__ = ["EXTRACTED_CHARS", "apply_extracted", "asked", "patterned"]

#: How much of a message the extractor model reads.
EXTRACTED_CHARS = 2000


def patterned(
    memory: AutoMemory, character: CharacterSpec | None, text: str
) -> tuple[Extracted, bool]:
    """What the patterns take from the message — the relations' facts and, for a
    character, the appraisal file's appraisal, all within one time
    :class:`~buddy.capabilities.memory.patterns.Budget` — and whether the extractor model
    must be asked too: only when the patterns said nothing (no appraisal and, when facts
    are wanted, no fact), or when the character has no appraisal file (``appraisal:
    null``: the model appraises every message)."""
    from buddy.capabilities.character.appraise import appraised
    from buddy.capabilities.memory.patterns import Budget

    budget = Budget()
    wants_facts = memory.auto and bool(memory.relations)
    found = from_patterns(memory, text, budget) if wants_facts else Extracted()
    table = character.appraisal if character is not None else None
    if table is not None:
        found = replace(found, appraisal=appraised(table, text, budget))
    if character is not None and table is None:
        return found, True
    said_nothing = found.appraisal is None and not found.facts
    return found, said_nothing and (character is not None or wants_facts)


async def asked(
    memory: AutoMemory,
    extractor: Model,
    prompt: str,
    text: str,
    found: Extracted,
    heard: list[str] | None = None,
) -> Extracted:
    """``found`` with what the extractor model says of the message (held to the declared
    relations). The model read the whole message, the patterns one clause at a time: a
    fact the patterns found is not taken twice, and one the model states with the same
    key (「我对花生过敏，很严重」: the severity too) replaces it. The model's appraisal,
    else the patterns'. The model's raw answer is appended to ``heard`` when given."""
    from buddy.capabilities.memory.extract import Fact

    response = await extractor.request(
        ModelRequest(system=prompt, messages=(Message("user", text[:EXTRACTED_CHARS]),))
    )
    if heard is not None:
        heard.append(response.text)
    said = from_model(memory, response.text)
    if not (memory.auto and memory.relations):
        said = replace(said, facts=())

    def key(fact: Fact) -> str:
        spec = memory.relation(fact.relation)
        names = spec.key if spec is not None else tuple(fact.slots)
        named = {n: fact.slots.get(n) for n in names}
        return json.dumps([fact.relation, named], sort_keys=True, ensure_ascii=False)

    stated = {key(f) for f in said.facts}
    kept = [f for f in found.facts if key(f) not in stated]
    appraisal = said.appraisal if said.appraisal is not None else found.appraisal
    return Extracted((*kept, *said.facts), appraisal, (*found.dropped, *said.dropped))


def apply_extracted(
    memory: AutoMemory,
    character: CharacterSpec | None,
    mind: Mind,
    extracted: Extracted,
    now: float,
    message: str,
    party: str = USER,
) -> None:
    """Apply what one message (``message``: its event id; ``party``: who sent it, a group
    member's id or :data:`USER`) said to ``mind``: each fact by its relation's policy —
    in a group with the member in the party slots that say ``user`` — and the appraisal
    to the mood toward ``party``, once."""
    mind.dropped = [*mind.dropped, *extracted.dropped][-REPORTS_KEPT:]
    for said in extracted.facts:
        spec = memory.relation(said.relation)
        fact = said
        if party != USER and spec is not None:
            fact = replace(said, slots=as_member(spec, said.slots, party))
        mind.ledger, outcome = apply(memory, mind.ledger, fact, now=now, message=message)
        mind.outcomes = [*mind.outcomes, outcome][-REPORTS_KEPT:]
    if character is not None and message not in mind.felt:
        mood = mind.moods.get(party) or start(character, now)
        raw = extracted.appraisal or {}
        appraisal = Appraisal(
            offence=float(raw.get("offence", 0.0)),
            apology=float(raw.get("apology", 0.0)),
            care=float(raw.get("care", 0.0)),
            explained=bool(raw.get("explained", False)),
        )
        mind.moods[party] = m = felt(mood, character, appraisal, now)
        mind.felt = (*mind.felt, message)[-FELT_KEPT:]
        point = [round(now, 3), *(round(v, 4) for v in (m.anger, m.sadness, m.trust))]
        kept = HISTORY_KEPT if party == USER else GROUP_HISTORY_KEPT
        mind.histories[party] = [*mind.histories.get(party, []), point][-kept:]
