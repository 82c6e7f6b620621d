"""What persona templates see of ``memory:`` — ``memory.card`` (the person card, a text
within ``card.max_chars``) and ``memory.facts`` (each fact with its relation) — and the
card's wording. Standard library only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from buddy.capabilities.memory.compiled import AutoMemory, RelationSpec

__all__ = ["card_text", "prompt"]

_PARTY = {"user": "对方", "buddy": "你"}


def _line(spec: RelationSpec, slots: Mapping[str, Any]) -> str:
    parties = [s for s in spec.slots if s.type == "party"]
    shown = []
    for slot in spec.slots:
        if slot.name not in slots:
            continue
        value = slots[slot.name]
        if slot.type == "party":
            if len(parties) == 1:  # whose fact it is goes without saying
                continue
            value = _PARTY.get(str(value), value)
        shown.append((slot.title, value))
    if len(shown) == 1:  # 称呼：小鱼, not 称呼：称呼 小鱼
        return f"- {spec.title}：{shown[0][1]}"
    return f"- {spec.title}：" + "，".join(f"{title} {value}" for title, value in shown)


def card_text(memory: AutoMemory, facts: Iterable[tuple[RelationSpec, Mapping[str, Any]]]) -> str:
    """The person card: one line per fact, whole lines within ``card_chars``."""
    lines: list[str] = []
    used = 0
    for spec, slots in facts:
        line = _line(spec, slots)
        cost = len(line) + (1 if lines else 0)
        if used + cost > memory.card_chars:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines)


def prompt(memory: AutoMemory, example: bool) -> dict[str, Any]:
    """``memory`` in the template context: with ``example``, a fact from each relation's
    first example (as ``buddy render`` shows the prompt); else none yet."""
    facts: list[tuple[RelationSpec, Mapping[str, Any]]] = []
    if example:
        for spec in memory.relations:
            for _, examples, _ in spec.examples[:1]:
                facts.extend((spec, f) for f in examples[:1])
    return {
        "card": card_text(memory, facts),
        "facts": [
            {"relation": spec.name, "title": spec.title, "slots": dict(slots), "status": "kept"}
            for spec, slots in facts
        ],
    }
