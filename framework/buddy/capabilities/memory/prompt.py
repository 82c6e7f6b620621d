"""What persona templates see of ``memory:`` — ``memory.card`` (the person card, a text
within ``card.max_chars``) and ``memory.facts`` (each fact with its relation) — and the
card's wording. Standard library only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from buddy.capabilities.memory.compiled import AutoMemory, RelationSpec
from buddy.capabilities.memory.limits import RISK_TIERS

if TYPE_CHECKING:
    from buddy.capabilities.memory.ledger import Entry

__all__ = ["card_text", "ledger_context", "prompt"]

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


def card_text(
    memory: AutoMemory,
    facts: Iterable[tuple[RelationSpec, Mapping[str, Any]]],
    notes: Iterable[str] = (),
) -> str:
    """The person card: one line per fact (``notes``: what each line adds, e.g. a
    dispute), whole lines within ``card_chars``."""
    lines: list[str] = []
    used = 0
    extra = iter(notes)
    for spec, slots in facts:
        line = _line(spec, slots) + next(extra, "")
        cost = len(line) + (1 if lines else 0)
        if used + cost > memory.card_chars:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines)


def ledger_context(memory: AutoMemory, entries: Iterable[Entry]) -> dict[str, Any]:
    """``memory`` in the template context for a conversation's facts: the card shows
    kept and disputed facts (a dispute with every value said, so the model asks instead
    of choosing), higher risk tiers first, then the most recently said; facts still
    awaiting confirmation are listed in ``facts`` only."""
    shown: list[tuple[RelationSpec, Mapping[str, Any]]] = []
    notes: list[str] = []
    facts: list[dict[str, Any]] = []
    ranked = []
    for entry in entries:
        spec = memory.relation(entry.relation)
        if spec is not None:
            ranked.append((-RISK_TIERS.index(spec.risk), -entry.updated, spec, entry))
    ranked.sort(key=lambda r: (r[0], r[1], r[2].name))
    for _, _, spec, entry in ranked:
        slots = {**entry.slots, spec.value: entry.value}
        facts.append(
            {
                "relation": spec.name,
                "title": spec.title,
                "slots": slots if entry.value is not None else dict(entry.slots),
                "status": entry.status,
                "proposed": entry.proposed,
                "claims": list(entry.claims),
            }
        )
        if entry.value is None:
            continue
        shown.append((spec, slots))
        notes.append(
            "（说法不一："
            + " / ".join(str(v) for v in (entry.value, *entry.claims))
            + "，先问清楚）"
            if entry.status == "disputed"
            else ""
        )
    return {"card": card_text(memory, shown, notes), "facts": facts}


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
