"""The companion layer's and memory's expectations as they stand after a step, for a
scenario recorded from a real conversation (:mod:`buddy.testing.record`; the
``StepExpect.record`` hooks of ``facts``, ``card``, ``mood``, ``lore`` and ``memory``).
Each answers the value its ``verify`` passes with, read from the same state, or ``None``
when there is nothing worth writing (no fact yet, no mood moved, no lore entry)."""

from __future__ import annotations

from typing import Any

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.lore.compiled import Lore
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.ledger import expire, member_of
from buddy.capabilities.memory.limits import AUTO_KEY_PREFIX
from buddy.capabilities.memory.prompt import ledger_context
from buddy.capabilities.memory.scenario import _members
from buddy.capabilities.memory.scenario_mood import _toward
from buddy.testing.expectations import Observed

__all__ = ["record_card", "record_facts", "record_lore", "record_memory", "record_mood"]


def _memory(state: dict[str, Any]) -> AutoMemory | None:
    memory = state["run"].blueprint.sections.get("memory")
    return memory if isinstance(memory, AutoMemory) else None


def record_facts(state: dict[str, Any], seen: Observed) -> list[dict[str, Any]] | None:
    """Every fact held now: its relation, its key slots, its value and status — in a
    group with whose it is (``member``, its party slots written ``user``)."""
    memory = _memory(state)
    if memory is None:
        return None
    names = _members(state)
    facts: list[dict[str, Any]] = []
    for entry in expire(state["ledger"], state["now"]).values():
        spec = memory.relation(entry.relation)
        if spec is None:
            continue
        member = member_of(spec, entry.slots) if names else None
        slots = {
            k: ("user" if member is not None and entry.slots[k] == member else entry.slots[k])
            for k in spec.key
            if k in entry.slots
        }
        fact: dict[str, Any] = {"relation": entry.relation}
        if member is not None and member in names:
            fact["member"] = names[member]
        if slots:
            fact["slots"] = slots
        value = entry.proposed if entry.status == "proposed" else entry.value
        if value is not None:
            fact["value"] = value
        if entry.status != "kept":
            fact["status"] = entry.status
        facts.append(fact)
    return facts or None


def record_card(state: dict[str, Any], seen: Observed) -> str | None:
    """The person card the model would see now, once there is one."""
    memory = _memory(state)
    if memory is None:
        return None
    names = dict(reversed(_members(state).items()))
    card = str(
        ledger_context(memory, expire(state["ledger"], state["now"]).values(), names)["card"]
    )
    return card or None


def record_mood(state: dict[str, Any], seen: Observed) -> dict[str, Any] | list[Any] | None:
    """The character's state now (two decimals), once a message moved it: toward the
    private chat's person, or a list toward each group member it is kept for."""
    spec = state["run"].blueprint.sections.get("character")
    if not isinstance(spec, CharacterSpec):
        return None
    stored = state["state"]

    def levels(member: str | None) -> dict[str, Any]:
        mood = _toward(state, spec, member)
        return {n: round(float(getattr(mood, n)), 2) for n in ("anger", "sadness", "trust")}

    names = _members(state)
    moods = stored.get("moods")
    if names and isinstance(moods, dict):
        return [{"member": names[m], **levels(m)} for m in names if m in moods] or None
    return levels(None) if isinstance(stored.get("mood"), dict) else None


def record_lore(state: dict[str, Any], seen: Observed) -> list[str] | None:
    """The lore entries the step's last turn put into its prompt (their names; each
    ``book/name`` when a name alone is not unique)."""
    lore = state["run"].blueprint.sections.get("lore")
    report = state["report"]
    if not isinstance(lore, Lore) or report is None or not seen.systems:
        return None
    went = sorted(n.removeprefix("lore:") for n, _ in report.parts if n.startswith("lore:"))
    names = [e.name for e in lore.entries]
    short = [g.split("/", 1)[-1] for g in went]
    if any(names.count(n) > 1 for n in short):
        return went or None
    return short or None


def record_memory(memory: dict[str, str], seen: Observed) -> dict[str, str] | None:
    """The memory entries now, other than the layer's own (its facts are ``facts``)."""
    kept = {k: v for k, v in sorted(memory.items()) if not k.startswith(AUTO_KEY_PREFIX)}
    return kept or None
