"""What a conversation's lore remembers between turns (:class:`LoreState`), the messages it
scans (:data:`Said`), and the timed effects — ``sticky``, ``cooldown``, ``delay`` — as
SillyTavern's ``WorldInfoTimedEffects`` keeps them, counted in each book's unit.

A **clock** is a number that grows as the conversation goes on: the turn (the first is 1)
for a book that counts ``turns``, the conversation's messages (the user's and the buddy's
replies, the one being answered included) for one that counts ``messages``. An effect
runs from ``start`` (the clock when it was set) while the clock is below ``end``:

- ``messages`` (SillyTavern's rule): a trigger at ``n`` holds a sticky entry while the
  clock is below ``n + sticky``, and a cooldown runs for ``cooldown`` from the first scan
  that sees the sticky span over (from the trigger, for an entry that is not sticky);
  an effect set at a clock that has not moved since (the same event run again) is
  dropped, unless it is a cooldown that followed a sticky span.
- ``turns`` (lore's rule before issue 23, kept): ``sticky`` more turns after the trigger,
  then ``cooldown`` turns in which it cannot trigger.

``delay``: an entry cannot trigger while the clock is below it. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from buddy.capabilities.lore.compiled import LoreEntry
from buddy.capabilities.lore.limits import RECENT_MESSAGES, SCAN_MESSAGES, SCAN_TEXT_CHARS

__all__ = [
    "BUDDY",
    "USER",
    "Effect",
    "LoreState",
    "Said",
    "Timed",
    "counted",
    "heard",
    "recent_data",
    "recent_from",
    "set_effects",
    "state_data",
    "state_from",
    "timed",
]

#: Who said a message lore keeps.
USER = "user"
BUDDY = "buddy"
#: A message lore scans: ``(who, text)``.
Said = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Effect:
    """One timed effect of one entry: on from ``start`` while the clock is below ``end``.

    Attributes:
        protected: Kept even when the clock has not moved since ``start`` (a cooldown
            that followed a sticky span).
    """

    start: int
    end: int
    protected: bool = False


@dataclass(frozen=True, slots=True)
class LoreState:
    """What a conversation's lore remembers between turns.

    Attributes:
        turn: The last turn scanned (the first turn is 1).
        messages: The conversation's messages lore has seen (the user's, and the buddy's
            committed replies).
        sticky: Entry id → its sticky span, in its book's unit.
        cooldown: Entry id → its cooldown, in its book's unit.
    """

    turn: int = 0
    messages: int = 0
    sticky: Mapping[str, Effect] = field(default_factory=dict)
    cooldown: Mapping[str, Effect] = field(default_factory=dict)


def counted(state: LoreState, messages: int = 1) -> LoreState:
    """``state`` with ``messages`` more messages seen."""
    return LoreState(state.turn, state.messages + messages, state.sticky, state.cooldown)


def heard(recent: Sequence[Said], who: str, said: str) -> list[Said]:
    """``recent`` with ``said`` (its first characters) added: the last
    :data:`~buddy.capabilities.lore.limits.SCAN_MESSAGES` most user messages, and at most
    :data:`~buddy.capabilities.lore.limits.RECENT_MESSAGES` of both sides."""
    kept = [*recent, (who, said[:SCAN_TEXT_CHARS])][-RECENT_MESSAGES:]
    while sum(1 for w, _ in kept if w == USER) > SCAN_MESSAGES[2]:
        kept.pop(0)
    return kept


@dataclass(frozen=True, slots=True)
class Timed:
    """The timed effects at one scan.

    Attributes:
        sticky: Entries a sticky span holds in.
        cooling: Entries cooling down.
        delayed: Entries their ``delay`` keeps out.
        effects: The sticky spans and cooldowns that still run (before this scan's
            triggers add theirs).
    """

    sticky: frozenset[str]
    cooling: frozenset[str]
    delayed: frozenset[str]
    effects: tuple[dict[str, Effect], dict[str, Effect]]


def _span(value: int, unit: str, after_sticky: bool = False) -> int:
    # turns: counted after the scan that set it; a cooldown set when a sticky span is seen
    # over starts at that very scan (which it already holds out).
    return value + (1 if unit == "turns" and not after_sticky else 0)


def timed(
    entries: Mapping[str, LoreEntry],
    state: LoreState,
    clocks: Mapping[str, int],
    units: Mapping[str, str],
) -> Timed:
    """The effects at this scan (``clocks``/``units``: each book's clock and unit by book
    name): spans over are dropped — a sticky one starting its entry's cooldown —, as are
    those of entries gone or no longer sticky or cooling, and unprotected ones set at a
    clock that has not moved."""
    sticky: dict[str, Effect] = {}
    cooldown: dict[str, Effect] = {}
    cooling: set[str] = set()

    def now(key: str) -> int | None:
        entry = entries.get(key)
        return None if entry is None else clocks.get(entry.book)

    for key, effect in state.sticky.items():
        entry, clock = entries.get(key), now(key)
        if entry is None or clock is None or not entry.sticky:
            continue
        if clock <= effect.start and not effect.protected:
            continue  # the clock has not moved: the trigger is made again, or not
        if clock >= effect.end:
            if entry.cooldown:
                end = clock + _span(entry.cooldown, units[entry.book], after_sticky=True)
                cooldown[key] = Effect(clock, end, protected=True)
                cooling.add(key)
            continue
        sticky[key] = effect
    for key, effect in state.cooldown.items():
        entry, clock = entries.get(key), now(key)
        if key in cooldown or entry is None or clock is None or not entry.cooldown:
            continue
        if (clock <= effect.start and not effect.protected) or clock >= effect.end:
            continue
        cooldown[key] = effect
        cooling.add(key)
    delayed = {
        key
        for key, entry in entries.items()
        if entry.delay and clocks.get(entry.book, 0) < entry.delay
    }
    return Timed(frozenset(sticky), frozenset(cooling), frozenset(delayed), (sticky, cooldown))


def set_effects(
    went_in: Iterable[LoreEntry],
    effects: tuple[dict[str, Effect], dict[str, Effect]],
    clocks: Mapping[str, int],
    units: Mapping[str, str],
) -> None:
    """Start the sticky span (or, for an entry that is not sticky, the cooldown) of each
    entry that went in and has none running (``effects`` is changed)."""
    sticky, cooldown = effects
    for entry in went_in:
        clock, unit = clocks[entry.book], units[entry.book]
        if entry.sticky and entry.id not in sticky:
            sticky[entry.id] = Effect(clock, clock + _span(entry.sticky, unit))
        elif entry.cooldown and not entry.sticky and entry.id not in cooldown:
            cooldown[entry.id] = Effect(clock, clock + _span(entry.cooldown, unit))


# ---------------------------------------------------------------- stored


def state_data(state: LoreState) -> dict[str, Any]:
    """``state`` as JSON data (``auto:lore``)."""

    def effects(kept: Mapping[str, Effect]) -> dict[str, list[int]]:
        return {k: [e.start, e.end, int(e.protected)] for k, e in kept.items()}

    return {
        "turn": state.turn,
        "messages": state.messages,
        "sticky": effects(state.sticky),
        "cooldown": effects(state.cooldown),
    }


def state_from(data: Mapping[str, Any]) -> LoreState:
    """The state stored as ``data``; the shape before issue 23 (``until``: the last turn a
    sticky span holds, ``blocked``: the first turn free again) reads as the same spans.

    Raises:
        TypeError, ValueError: ``data`` is not a state.
    """

    def effects(kept: Any) -> dict[str, Effect]:
        out = {}
        for key, value in dict(kept or {}).items():
            start, end, *protected = (int(v) for v in value)
            out[str(key)] = Effect(start, end, bool(protected and protected[0]))
        return out

    sticky = effects(data.get("sticky"))
    cooldown = effects(data.get("cooldown"))
    for key, last in dict(data.get("until") or {}).items():
        sticky.setdefault(str(key), Effect(0, int(last) + 1))
    for key, free in dict(data.get("blocked") or {}).items():
        cooldown.setdefault(str(key), Effect(0, int(free), protected=True))
    return LoreState(int(data.get("turn", 0)), int(data.get("messages", 0)), sticky, cooldown)


def recent_data(recent: Sequence[Said]) -> list[Any]:
    """The recent messages as stored: a user's as its text (the shape before issue 23),
    a reply as ``["buddy", text]``."""
    return [said if who == USER else [who, said] for who, said in recent]


def recent_from(data: Any) -> list[Said]:
    """The recent messages stored as ``data`` (either shape); what is not one is skipped."""
    out: list[Said] = []
    for item in data if isinstance(data, list) else []:
        if isinstance(item, str):
            out.append((USER, item))
        elif isinstance(item, list) and len(item) == 2 and item[0] in (USER, BUDDY):
            out.append((str(item[0]), str(item[1])))
    return out[-RECENT_MESSAGES:]
