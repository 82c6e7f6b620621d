"""What the playground's memory panel shows of a buddy's companion layer: its relations
(to name a ledger's facts, and its party slots to tell whose a group's fact is), the
character's parameters (to draw the state's decay between messages) and the budget."""

from __future__ import annotations

from typing import Any

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.limits import QUARREL_ANGER
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.compile.blueprint import Blueprint

__all__ = ["panel"]


def panel(blueprint: Blueprint) -> dict[str, Any]:
    """``companion``: ``None`` for a buddy without the layer."""
    memory = blueprint.sections.get("memory")
    character = blueprint.sections.get("character")
    if memory is None and character is None and blueprint.sections.get("lore") is None:
        return {"companion": None}
    shown: dict[str, Any] = {"relations": {}, "character": None, "budget": None}
    if isinstance(memory, AutoMemory):
        shown["budget"] = memory.budget_chars
        shown["relations"] = {
            r.name: {
                "title": r.title,
                "value": r.value,
                "risk": r.risk,
                "slots": {s.name: s.title for s in r.slots},
                # In a group these hold a member's id: the fact is that member's.
                "parties": [s.name for s in r.slots if s.type == "party"],
            }
            for r in memory.relations
        }
    if isinstance(character, CharacterSpec):
        shown["character"] = {
            "anger_half_life_days": character.number("anger_half_life_days"),
            "sadness_half_life_days": character.number("sadness_half_life_days"),
            "trust_start": character.trust_start,
            "quarrel": QUARREL_ANGER,
        }
    return {"companion": shown}
