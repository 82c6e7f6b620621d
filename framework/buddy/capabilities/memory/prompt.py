"""What persona templates see of ``memory:`` — ``memory.card`` (the person card, a text
within ``card.max_chars``) and ``memory.facts`` (each fact with its relation) — and the
card's wording. Standard library only.

In a group the card is grouped by member: facts about no member first, then each
member's under a line naming them as their messages are prefixed (``[小李 #m_li]``), the
members in the order given (the one speaking now first), then any whose name is unknown.
A private chat's card is one line per fact, as it always was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from buddy.capabilities.memory.compiled import AutoMemory, RelationSpec
from buddy.capabilities.memory.limits import RISK_TIERS
from buddy.capabilities.memory.slots import member_of

if TYPE_CHECKING:
    from buddy.capabilities.memory.ledger import Entry

__all__ = ["card_text", "ledger_context", "member_head", "prompt"]

_PARTY = {"user": "对方", "buddy": "你"}


def member_head(member: str, names: Mapping[str, str]) -> str:
    """The card's line above a group member's facts: the member as their messages are
    prefixed (``[小李 #m_li]``; ``[#m_li]`` when no name is known)."""
    name = names.get(member, "")
    return f"[{name} #{member}]" if name else f"[#{member}]"


def _line(spec: RelationSpec, slots: Mapping[str, Any], names: Mapping[str, str]) -> str:
    parties = [s for s in spec.slots if s.type == "party"]
    shown = []
    for slot in spec.slots:
        if slot.name not in slots:
            continue
        value = slots[slot.name]
        if slot.type == "party":
            if len(parties) == 1:  # whose fact it is goes without saying
                continue
            value = _PARTY.get(str(value)) or names.get(str(value), value)
        shown.append((slot.title, value))
    if len(shown) == 1:  # 称呼：小鱼, not 称呼：称呼 小鱼
        return f"- {spec.title}：{shown[0][1]}"
    return f"- {spec.title}：" + "，".join(f"{title} {value}" for title, value in shown)


def card_text(
    memory: AutoMemory,
    facts: Iterable[tuple[RelationSpec, Mapping[str, Any]]],
    notes: Iterable[str] = (),
    names: Mapping[str, str] | None = None,
) -> str:
    """The person card: one line per fact (``notes``: what each line adds, e.g. a
    dispute), whole lines within ``card_chars``; in a group, each member's facts under a
    line naming them (``names``: member id → name, in the order the card lists them), a
    member's line only with at least one of their facts."""
    names = names or {}
    groups: dict[str | None, list[str]] = {None: []}
    extra = iter(notes)
    for spec, slots in facts:
        line = _line(spec, slots, names) + next(extra, "")
        groups.setdefault(member_of(spec, slots), []).append(line)
    order = [None, *(m for m in names if m in groups), *(m for m in groups if m not in names)]
    lines: list[str] = []
    used = 0
    for member in dict.fromkeys(order):
        for index, line in enumerate(groups[member]):
            new = [member_head(member, names), line] if member and index == 0 else [line]
            cost = sum(len(x) for x in new) + len(new) - (0 if lines else 1)
            if used + cost > memory.card_chars:
                return "\n".join(lines)
            lines.extend(new)
            used += cost
    return "\n".join(lines)


def ledger_context(
    memory: AutoMemory, entries: Iterable[Entry], names: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``memory`` in the template context for a conversation's facts: the card shows
    kept and disputed facts (a dispute with every value said, so the model asks instead
    of choosing), higher risk tiers first, then the most recently said — in a group
    grouped by member (``names``: member id → name, in the card's order); facts still
    awaiting confirmation are listed in ``facts`` only, each with its ``member`` (the
    group member it is about, or ``None``)."""
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
                "member": member_of(spec, entry.slots),
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
    return {"card": card_text(memory, shown, notes, names), "facts": facts}


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
            {
                "relation": spec.name,
                "title": spec.title,
                "slots": dict(slots),
                "status": "kept",
                "member": None,
            }
            for spec, slots in facts
        ],
    }
