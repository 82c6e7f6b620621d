"""What the companion engine holds of one conversation (:class:`Mind`), and how it is kept
on the platform: under ``auto:`` keys of the conversation's memory, one entry per fact
(each written whole), ``auto:state`` (mood, the messages it has felt, the card asked, the
reconcile) and ``auto:lore`` (the lore's counters, the recent user messages it scans).

Pure functions: :func:`read_back` makes a mind's stored part from the entries, and
:func:`wanted` says which entries a mind must have.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.state import Mood
from buddy.capabilities.lore.scan import LoreState
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.ledger import Entry, Outcome, decode, encode
from buddy.capabilities.memory.limits import AUTO_KEY_PREFIX

__all__ = [
    "FELT_KEPT",
    "HISTORY_KEPT",
    "LORE_KEY",
    "RECENT_KEPT",
    "REPORTS_KEPT",
    "STATE_KEY",
    "Mind",
    "Report",
    "read_back",
    "wanted",
]

#: The layer's own entries (besides one per fact).
STATE_KEY = f"{AUTO_KEY_PREFIX}state"
LORE_KEY = f"{AUTO_KEY_PREFIX}lore"
#: The recent user messages kept for lore to scan (a book scans at most this many).
RECENT_KEPT = 20
#: The messages whose appraisal the mood remembers having felt.
FELT_KEPT = 16
#: Reports kept per conversation, for the playground's context inspector.
REPORTS_KEPT = 50
#: The mood after each of the last messages that moved it, kept in ``auto:state`` for the
#: playground's plot: ``[platform time, anger, sadness, trust]``.
HISTORY_KEPT = 48


@dataclass(frozen=True, slots=True)
class Report:
    """What the layer put into one turn's prompt, for the context inspector.

    Attributes:
        event: The event the turn answered.
        at: Its platform time.
        settled: Whether the message's extraction was done within ``wait_ms``.
        parts: ``(name, characters)`` of each part that went in.
        left_out: ``(what, why)`` of each part that did not.
        budget: ``memory.budget.max_chars``.
    """

    event: str
    at: float
    settled: bool
    parts: tuple[tuple[str, int], ...]
    left_out: tuple[tuple[str, str], ...]
    budget: int


@dataclass
class Mind:
    """What the layer holds of one conversation in this process.

    Attributes:
        ledger: The facts, by memory key.
        mood: The character's state (``None``: no character).
        felt: The messages whose appraisal moved the mood.
        history: ``[at, anger, sadness, trust]`` after each of them (the last
            :data:`HISTORY_KEPT`).
        lore: The lore's counters; ``recent``: the user messages it scans.
        offered: The proposed fact the last prompt asked the model to ask about.
        asked: The fact the confirmation card on screen asks about.
        reconcile: Where the quarrel's ``speak_first`` stands: ``""`` (no quarrel, or
            not yet scheduled), ``scheduled`` (its subscription is open) or ``done`` (the
            buddy reached out; not again until this quarrel is over).
        stored: What the platform holds under the layer's keys (key → text).
        turn_done: Set when the running turn was committed.
        outcomes: What each fact of the last extractions did (newest last).
        dropped: What the extractor said that was not kept, and why (newest last).
        reports: The context reports of the last turns.
        last_event: The event of the last turn.
        pending: Event id → (its facts are taken in, they are stored).
    """

    ledger: dict[str, Entry] = field(default_factory=dict)
    mood: Mood | None = None
    felt: tuple[str, ...] = ()
    history: list[list[float]] = field(default_factory=list)
    lore: LoreState = field(default_factory=LoreState)
    recent: list[str] = field(default_factory=list)
    offered: str | None = None
    asked: str | None = None
    reconcile: str = ""
    stored: dict[str, str] = field(default_factory=dict)
    turn_done: asyncio.Event = field(default_factory=asyncio.Event)
    outcomes: list[Outcome] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)
    last_event: str = ""
    pending: dict[str, tuple[asyncio.Event, asyncio.Event]] = field(default_factory=dict)


def read_back(
    mind: Mind,
    entries: list[dict[str, Any]],
    memory: AutoMemory,
    character: CharacterSpec | None,
    *,
    lore: bool = False,
) -> None:
    """Set ``mind``'s stored part from the conversation's memory ``entries`` (the
    platform's memory is the truth: a fact forgotten in the playground, or another
    process's write, is seen); with ``lore``, the lore's counters and recent messages too."""
    stored = {
        str(e["key"]): str(e["text"]) for e in entries if str(e["key"]).startswith(AUTO_KEY_PREFIX)
    }
    mind.stored = stored
    ledger: dict[str, Entry] = {}
    for key, text in stored.items():
        if key in (STATE_KEY, LORE_KEY):
            continue
        entry = decode(text)
        if entry is not None and memory.relation(entry.relation) is not None:
            ledger[key] = entry
    mind.ledger = ledger
    state = _json(stored.get(STATE_KEY))
    mood = state.get("mood")
    if character is not None and isinstance(mood, Mapping):
        try:
            mind.mood = Mood(**mood)
        except TypeError:
            mind.mood = None
    mind.felt = tuple(str(m) for m in state.get("felt", ()))
    history = state.get("history", [])
    mind.history = [
        [float(v) for v in point]
        for point in (history if isinstance(history, list) else [])
        if isinstance(point, list) and len(point) == 4
    ][-HISTORY_KEPT:]
    asked = state.get("asked")
    mind.asked = asked if isinstance(asked, str) and asked in ledger else None
    reconcile = state.get("reconcile", "")
    mind.reconcile = reconcile if reconcile in ("", "scheduled", "done") else ""
    if lore:
        saved = _json(stored.get(LORE_KEY))
        mind.recent = [str(t) for t in saved.get("recent", ())][-RECENT_KEPT:]
        try:
            mind.lore = LoreState(
                int(saved.get("turn", 0)),
                {str(k): int(v) for k, v in dict(saved.get("until", {})).items()},
                {str(k): int(v) for k, v in dict(saved.get("blocked", {})).items()},
            )
        except (TypeError, ValueError):
            mind.lore = LoreState()


def wanted(mind: Mind, *, lore: bool) -> dict[str, str]:
    """The entries ``mind`` must have on the platform (key → text); ``lore``: the buddy
    has a lore book."""
    wanted = {key: encode(entry) for key, entry in mind.ledger.items()}
    state: dict[str, Any] = {"felt": list(mind.felt), "reconcile": mind.reconcile}
    if mind.history:
        state["history"] = mind.history
    if mind.mood is not None:
        state["mood"] = asdict(mind.mood)
    if mind.asked is not None:
        state["asked"] = mind.asked
    if mind.mood is not None or mind.asked is not None or mind.reconcile:
        wanted[STATE_KEY] = _dump(state)  # else nothing to keep: no entry
    if lore:
        wanted[LORE_KEY] = _dump(
            {
                "turn": mind.lore.turn,
                "until": dict(mind.lore.until),
                "blocked": dict(mind.lore.blocked),
                "recent": mind.recent,
            }
        )
    return wanted


def _json(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _dump(data: Mapping[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
