"""Which lore entries go into a turn's prompt: the recent messages scanned for each
entry's keys, stickiness and cooldown counted in turns, the budget filled by priority.

Pure: the runtime keeps a :class:`LoreState` per conversation and calls :func:`scan` once
per turn; ``buddy render``, the playground's context inspector and tests call it the
same way. Standard library only, but for the patterns' engine.

Per turn: an enabled entry is **in** when it is ``always``; or its sticky span from an
earlier trigger still runs; or it **triggers** — one of its keys (a word, ignoring case
unless ``case_sensitive``) or patterns is found in one of the last ``scan`` messages
(each read up to 2000 characters), with one of its ``also`` words when it has any — and
is not cooling down (the patterns of one scan share a time budget,
:class:`~buddy.capabilities.memory.patterns.Budget`: one that runs out triggers nothing,
is logged once, and the others run on). A trigger starts its sticky span (``sticky`` more
turns) and, when the entry has a ``cooldown``, it cannot trigger again until that many
turns after its span ends. Entries that are in are taken by priority (higher first, then
order) while their content fits the budget; the others are left out, each with its
reason. What goes in is in ``order`` (lower first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from buddy.capabilities.lore.compiled import Lore, LoreEntry
from buddy.capabilities.lore.limits import SCAN_TEXT_CHARS
from buddy.capabilities.memory.patterns import Budget

__all__ = ["LoreState", "Scanned", "scan"]

#: What joins two entries in the prompt (counted against the budget).
SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class LoreState:
    """What a conversation's lore remembers between turns.

    Attributes:
        turn: The last turn scanned (the first turn is 1).
        until: Entry id → the last turn its sticky span holds it in.
        blocked: Entry id → the first turn it may trigger again.
    """

    turn: int = 0
    until: Mapping[str, int] = field(default_factory=dict)
    blocked: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Scanned:
    """One turn's lore.

    Attributes:
        entries: What goes into the prompt, in order.
        left_out: ``(entry, reason)`` of each entry that was in but did not fit
            (``budget``), or matched while cooling down (``cooldown``).
        state: The state for the next turn.
        chars: The characters the entries take, separators included.
    """

    entries: tuple[LoreEntry, ...]
    left_out: tuple[tuple[LoreEntry, str], ...]
    state: LoreState
    chars: int


def _found(words: Sequence[str], texts: Sequence[str], case_sensitive: bool) -> bool:
    if case_sensitive:
        return any(w in t for w in words for t in texts)
    folded = [t.casefold() for t in texts]
    return any(w.casefold() in t for w in words for t in folded)


def _matches(entry: LoreEntry, recent: Sequence[str], clock: Budget) -> bool:
    texts = [t[:SCAN_TEXT_CHARS] for t in recent[-entry.scan :]] if recent else []
    owner = f"lore {entry.id}"
    hit = _found(entry.keys, texts, entry.case_sensitive) or any(
        clock.search(p, t, owner=owner, ignore_case=not entry.case_sensitive)
        for p in entry.patterns
        for t in texts
    )
    return hit and (not entry.also or _found(entry.also, texts, entry.case_sensitive))


def scan(lore: Lore, recent: Sequence[str], state: LoreState, budget: int) -> Scanned:
    """This turn's entries for the ``recent`` messages (oldest first) within ``budget``
    characters."""
    turn = state.turn + 1
    until = {k: v for k, v in state.until.items() if v >= turn}
    blocked = {k: v for k, v in state.blocked.items() if v > turn}
    inside: list[LoreEntry] = []
    left_out: list[tuple[LoreEntry, str]] = []
    clock = Budget()  # the patterns' time (``budget`` is the prompt's characters)
    for entry in lore.entries:
        if not entry.enabled:
            continue
        if entry.always or entry.id in until:
            inside.append(entry)
            continue
        if not _matches(entry, recent, clock):
            continue
        if entry.id in blocked:
            left_out.append((entry, "cooldown"))
            continue
        inside.append(entry)
        last = turn + (entry.sticky or 0)
        if entry.sticky:
            until[entry.id] = last
        if entry.cooldown:
            blocked[entry.id] = last + entry.cooldown + 1
    taken: list[LoreEntry] = []
    used = 0
    for entry in sorted(inside, key=lambda e: (-e.priority, e.order, e.id)):
        cost = len(entry.content) + (len(SEPARATOR) if taken else 0)
        if used + cost <= budget:
            taken.append(entry)
            used += cost
        else:
            left_out.append((entry, "budget"))
    return Scanned(
        entries=tuple(sorted(taken, key=lambda e: (e.order, e.id))),
        left_out=tuple(left_out),
        state=LoreState(turn, until, blocked),
        chars=used,
    )
