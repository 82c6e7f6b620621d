"""What a turn's prompt gets from the companion engine: the person card (the ledger's kept
and disputed facts), the character's state decayed to the event's platform time, the lore
entries the recent messages trigger, and in the system prompt a proposed fact to ask
about or the reconcile of a quarrel — all within ``memory.budget``. Pure: a function of
the declared sections, the mind and the event (the mind keeps the lore's new counters,
the fact offered and the report).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.prompt import mood_context
from buddy.capabilities.character.state import decayed, start
from buddy.capabilities.companion.mind import REPORTS_KEPT, Mind, Report
from buddy.capabilities.lore.compiled import Lore
from buddy.capabilities.lore.prompt import scanned_context
from buddy.capabilities.lore.scan import scan
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.ledger import expire
from buddy.capabilities.memory.prompt import ledger_context
from buddy.extend.turn import Layered

__all__ = ["CONFIRM_NO", "CONFIRM_YES", "RECONCILE_KEY", "first_offer", "layered", "reconciling"]

#: The options of the card that asks whether to keep a proposed fact.
CONFIRM_YES = "记住吧"
CONFIRM_NO = "不用记"
#: The proactive subscription of ``speak_first``.
RECONCILE_KEY = "companion.reconcile"


def reconciling(event: Any) -> bool:
    """Whether ``event`` is the reconcile's proactive run (``speak_first``)."""
    return bool(
        event.type == "proactive" and event.payload.get("subscription_key") == RECONCILE_KEY
    )


def layered(
    memory: AutoMemory,
    character: CharacterSpec | None,
    lore: Lore | None,
    mind: Mind,
    event: Any,
    settled: bool,
) -> Layered:
    """The turn's context and prompt part for ``event`` (``settled``: its message's
    extraction was done within ``wait_ms``); the mind keeps its report."""
    now = float(event.created_at)
    budget = memory.budget_chars
    parts: list[tuple[str, int]] = []
    left: list[tuple[str, str]] = []
    context: dict[str, Any] = {}
    prompt = ""
    card = ledger_context(memory, expire(mind.ledger, now).values())
    used = len(card["card"])
    if memory.relations:
        context["memory"] = card
        parts.append(("memory.card", used))
    if character is not None:
        mood = mind.mood or start(character, now)
        mood = decayed(mood, character, now)
        context["character"] = mood_context(character, mood)
        parts.append(("character", 0))
    reconcile = reconciling(event)
    if reconcile:
        prompt = _RECONCILE
    else:
        prompt, mind.offered = _ask(memory, mind, now)
    if prompt:
        if used + len(prompt) <= budget:
            used += len(prompt)
            parts.append(("ask" if not reconcile else "reconcile", len(prompt)))
        else:
            left.append(("ask", "budget"))
            prompt, mind.offered = "", None
    if lore is not None:
        scanned = scan(lore, mind.recent, mind.lore, max(0, budget - used))
        mind.lore = scanned.state
        context["lore"] = scanned_context(scanned)
        parts.extend((f"lore:{e.id}", len(e.content)) for e in scanned.entries)
        left.extend((f"lore:{e.id}", why) for e, why in scanned.left_out)
    report = Report(str(event.id), now, settled, tuple(parts), tuple(left), budget)
    mind.reports = [*mind.reports, report][-REPORTS_KEPT:]
    return Layered(context, prompt)


_RECONCILE = (
    "## 先开口\n这是你自己定下的一次主动联系：你们上次闹得不愉快，到现在还没和好。"
    "照你的性格先开口，说一两句，别翻旧账。"
)


def _offers(memory: AutoMemory, mind: Mind, now: float) -> list[str]:
    """Proposed facts that wait for the user's explicit confirmation, oldest first."""
    waiting = []
    for key, entry in expire(mind.ledger, now).items():
        spec = memory.relation(entry.relation)
        if spec is not None and entry.proposed is not None and spec.confirmation == "explicit":
            waiting.append((entry.updated, key))
    return [key for _, key in sorted(waiting)]


def first_offer(memory: AutoMemory, mind: Mind) -> str | None:
    """The oldest proposed fact waiting for confirmation, however old (the one a
    confirmation card the model sent asks about, when the prompt offered none)."""
    offers = _offers(memory, mind, float("-inf"))
    return offers[0] if offers else None


def _ask(memory: AutoMemory, mind: Mind, now: float) -> tuple[str, str | None]:
    """The system prompt's request to ask about a proposed fact, and its key."""
    if mind.asked is not None:
        return "", None
    offers = _offers(memory, mind, now)
    if not offers:
        return "", None
    key = offers[0]
    entry = mind.ledger[key]
    line = ledger_context(memory, [replace(entry, value=entry.proposed, status="kept")])["card"]
    fact = line.removeprefix("- ")
    return (
        "## 先问一句再记\n"
        f"对方刚提到这件事：{fact}。这类事记错了会有麻烦，先用 ask_question 发题卡问对方要不要记下"
        f"（题目用你自己的话说清是哪件事；选项只写「{CONFIRM_YES}」「{CONFIRM_NO}」两个）。"
        "一次只问这一件，其他的照常聊。",
        key,
    )
