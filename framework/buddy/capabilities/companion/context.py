"""What a turn's prompt gets from the companion engine: the person card (the ledger's kept
and disputed facts), the character's state decayed to the event's platform time, the lore
entries the recent messages trigger, and in the system prompt a proposed fact to ask
about or the reconcile of a quarrel — all within ``memory.budget``. Pure: a function of
the declared sections, the mind and the event (the mind keeps the lore's new counters,
the fact offered and the report).

In a group the party of a message is its sender, the member (:func:`speaker`): the mood
the templates see is the mood toward them, and only their own proposals (and those about
no member) are offered for a confirmation card, asked of them by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from buddy.capabilities.character import placed as mood_words
from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.prompt import mood_context
from buddy.capabilities.character.state import decayed, start
from buddy.capabilities.companion.mind import REPORTS_KEPT, USER, Mind, Report
from buddy.capabilities.lore.compiled import Lore
from buddy.capabilities.lore.prompt import scanned_context
from buddy.capabilities.lore.scan import DEFAULT_USER, Scanned, scan
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.ledger import PARTIES, expire, member_of
from buddy.capabilities.memory.prompt import ledger_context
from buddy.extend.turn import Injected, Layered

__all__ = [
    "CONFIRM_NO",
    "CONFIRM_YES",
    "RECONCILE_KEY",
    "TEXTS_KEPT",
    "first_offer",
    "layered",
    "reconciling",
    "speaker",
    "user_name",
]

#: The options of the card that asks whether to keep a proposed fact.
CONFIRM_YES = "记住吧"
CONFIRM_NO = "不用记"
#: The proactive subscription of ``speak_first``.
RECONCILE_KEY = "companion.reconcile"
#: The last reports that keep each part's text (the playground shows five turns); older
#: ones keep the sizes only, so fifty reports of a conversation stay small.
TEXTS_KEPT = 5


def reconciling(event: Any) -> bool:
    """Whether ``event`` is the reconcile's proactive run (``speak_first``)."""
    return bool(
        event.type == "proactive" and event.payload.get("subscription_key") == RECONCILE_KEY
    )


def speaker(kind: str, event: Any) -> tuple[str, str]:
    """Whose the event is, as the layer keeps it: ``(USER, "")`` in a private chat (or an
    event no member sent); in a group (``kind``), the sending member's id and the name the
    platform gives them."""
    sender = event.payload.get("sender") if event.type == "message" else None
    if kind != "group" or not isinstance(sender, Mapping):
        return USER, ""
    member = sender.get("member_id")
    if not isinstance(member, str) or not member or member in PARTIES:
        return USER, ""
    return member, str(sender.get("name") or "")


def layered(
    memory: AutoMemory,
    character: CharacterSpec | None,
    lore: Lore | None,
    mind: Mind,
    event: Any,
    settled: bool,
    party: str = USER,
) -> Layered:
    """The turn's context and prompt part for ``event`` (``settled``: its message's
    extraction was done within ``wait_ms``; ``party``: who it is from, :func:`speaker`);
    the mind keeps its report."""
    now = float(event.created_at)
    budget = memory.budget_chars
    parts: list[tuple[str, int]] = []
    left: list[tuple[str, str]] = []
    texts: list[tuple[str, str]] = []
    empty: list[tuple[str, str]] = []
    context: dict[str, Any] = {}
    prompt = ""
    card = ledger_context(memory, expire(mind.ledger, now).values(), mind.names())
    used = len(card["card"])
    if memory.relations:
        context["memory"] = card
        parts.append(("memory.card", used))
        texts.append(("memory.card", card["card"]))
        if not used:
            empty.append(("memory.card", _empty_card(memory, card["facts"])))
    if character is not None:
        mood = mind.moods.get(party) or start(character, now)
        mood = decayed(mood, character, now)
        feeling = mood_context(character, mood)
        context["character"] = feeling
        parts.append(("character", 0))
        words = mood_words.text(feeling).removeprefix(f"{mood_words.HEADING}\n")
        texts.append(("character", words))
        empty.append(("character", _numbers(feeling)))
    reconcile = reconciling(event)
    if reconcile:
        prompt = _RECONCILE
    else:
        prompt, mind.offered = _ask(memory, mind, now, party)
    if prompt:
        if used + len(prompt) <= budget:
            used += len(prompt)
            parts.append(("ask" if not reconcile else "reconcile", len(prompt)))
            texts.append(("ask" if not reconcile else "reconcile", prompt))
        else:
            left.append(("ask", "budget"))
            prompt, mind.offered = "", None
    injected: tuple[Injected, ...] = ()
    if lore is not None:
        scanned = _scanned(lore, mind, event, max(0, budget - used))
        context["lore"] = scanned_context(scanned)
        injected = tuple(Injected(*depth) for depth in scanned.depths())
        parts.extend((f"lore:{e.id}", len(e.content)) for e in scanned.entries)
        texts.extend((f"lore:{e.id}", e.content) for e in scanned.entries)
        left.extend((f"lore:{e.id}", why) for e, why in scanned.left_out)
    report = Report(
        str(event.id), now, settled, tuple(parts), tuple(left), budget, tuple(texts), tuple(empty)
    )
    _keep(mind, report)
    return Layered(context, prompt, injected)


def _scanned(lore: Lore, mind: Mind, event: Any, budget: int) -> Scanned:
    """This turn's lore within ``budget`` characters (the mind keeps its new state): the
    draws seeded by the event, ``{{user}}`` the name the platform gives the sender."""
    scanned = scan(
        lore,
        mind.recent,
        mind.lore,
        budget,
        event=str(event.id),
        user=user_name(event),
        conversation=str(getattr(event, "conversation_id", "") or ""),
    )
    mind.lore = scanned.state
    return scanned


def user_name(event: Any) -> str:
    """``{{user}}`` in lore: the sender's name on a message that names one, else
    :data:`~buddy.capabilities.lore.scan.DEFAULT_USER`."""
    sender = event.payload.get("sender") if event.type == "message" else None
    name = sender.get("name") if isinstance(sender, Mapping) else None
    return name if isinstance(name, str) and name.strip() else DEFAULT_USER


def _keep(mind: Mind, report: Report) -> None:
    """The mind keeps ``report`` among its last :data:`REPORTS_KEPT`, the texts of the
    last :data:`TEXTS_KEPT` only."""
    reports = [*mind.reports, report][-REPORTS_KEPT:]
    if len(reports) > TEXTS_KEPT:
        reports[-TEXTS_KEPT - 1] = replace(reports[-TEXTS_KEPT - 1], texts=())
    mind.reports = reports


def _empty_card(memory: AutoMemory, facts: list[dict[str, Any]]) -> str:
    """Why this turn's card is empty (for the inspector)."""
    if not facts:
        return "nothing known yet — the card is empty"
    waiting = sum(1 for f in facts if f["status"] == "proposed")
    if waiting == len(facts):
        said = "1 fact awaits" if waiting == 1 else f"{waiting} facts await"
        return f"nothing kept yet — {said} confirmation; the card lists kept facts only"
    return f"no line of the card fits card.max_chars ({memory.card_chars})"


def _numbers(mood: Mapping[str, Any]) -> str:
    """Why the character's part has no size (for the inspector)."""
    quarrel = ", a quarrel" if mood["quarrel"] else ""
    return (
        f"given to the template as numbers (anger {mood['anger']:.2f}, sadness "
        f"{mood['sadness']:.2f}, trust {mood['trust']:.2f}{quarrel}), not as text: it takes "
        "none of the budget, and its size in the prompt is the template's wording of it "
        "(the words here are those the layer adds after a template that does not place it)"
    )


_RECONCILE = (
    "## 先开口\n这是你自己定下的一次主动联系：你们上次闹得不愉快，到现在还没和好。"
    "照你的性格先开口，说一两句，别翻旧账。"
)


def _offers(memory: AutoMemory, mind: Mind, now: float, party: str) -> list[str]:
    """Proposed facts that wait for ``party``'s explicit confirmation, oldest first (in a
    group: the member's own, and those about no member)."""
    waiting = []
    for key, entry in expire(mind.ledger, now).items():
        spec = memory.relation(entry.relation)
        if spec is None or entry.proposed is None or spec.confirmation != "explicit":
            continue
        if party == USER or member_of(spec, entry.slots) in (None, party):
            waiting.append((entry.updated, key))
    return [key for _, key in sorted(waiting)]


def first_offer(memory: AutoMemory, mind: Mind, party: str = USER) -> str | None:
    """The oldest proposed fact waiting for ``party``'s confirmation, however old (the one
    a confirmation card the model sent asks about, when the prompt offered none)."""
    offers = _offers(memory, mind, float("-inf"), party)
    return offers[0] if offers else None


def _ask(memory: AutoMemory, mind: Mind, now: float, party: str) -> tuple[str, str | None]:
    """The system prompt's request to ask about a proposed fact, and its key."""
    if mind.asked is not None:
        return "", None
    offers = _offers(memory, mind, now, party)
    if not offers:
        return "", None
    key = offers[0]
    entry = mind.ledger[key]
    shown = [replace(entry, value=entry.proposed, status="kept")]
    card = ledger_context(memory, shown, mind.members)["card"]
    line = card.splitlines()[-1] if card else ""  # a group's: the fact, not the member
    fact = line.removeprefix("- ")
    who = "对方" if party == USER else mind.members.get(party) or f"#{party}"
    return (
        "## 先问一句再记\n"
        f"{who}刚提到这件事：{fact}。这类事记错了会有麻烦，先用 ask_question 发题卡问{who}要不要记下"
        f"（题目用你自己的话说清是哪件事；选项只写「{CONFIRM_YES}」「{CONFIRM_NO}」两个）。"
        "一次只问这一件，其他的照常聊。",
        key,
    )
