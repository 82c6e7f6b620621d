"""What the companion engine holds of one conversation (:class:`Mind`), and how it is kept
on the platform: under ``auto:`` keys of the conversation's memory, one entry per fact
(each written whole), ``auto:state`` (mood, the messages it has felt, the card asked, the
reconcile, a group's members) and ``auto:lore`` (the lore's counters and timed effects,
and the recent messages it scans — the user's, and the buddy's committed replies when a
book scans them — trimmed from the oldest to fit one memory text).

The mood is kept per party: :data:`USER` in a private chat, each member's id in a group.
``auto:state`` of a private chat is what it always was — ``mood`` and ``history`` — and a
group's holds ``moods`` and ``histories`` by member id, ``members`` (``[[id, name], …]``,
the latest name seen of each, the one who spoke last at the end) and ``asked_member`` (who
the confirmation card asks). That entry is one memory text (16 KiB at most), so a group's
state keeps the last :data:`MEMBERS_KEPT` members who spoke (and the mood toward them),
and the plot's points of the last :data:`PLOTTED_MEMBERS`.

Pure functions: :func:`read_back` makes a mind's stored part from the entries, and
:func:`wanted` says which entries a mind must have.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.state import Mood
from buddy.capabilities.lore.state import (
    LoreState,
    Said,
    recent_data,
    recent_from,
    state_data,
    state_from,
)
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.ledger import Entry, Outcome, decode, encode
from buddy.capabilities.memory.limits import AUTO_KEY_PREFIX, MEMORY_TEXT_BYTES

__all__ = [
    "FELT_KEPT",
    "GROUP_HISTORY_KEPT",
    "HISTORY_KEPT",
    "LORE_KEY",
    "MEMBERS_KEPT",
    "PLOTTED_MEMBERS",
    "RECENT_KEPT",
    "REPORTS_KEPT",
    "STATE_KEY",
    "USER",
    "Mind",
    "Report",
    "read_back",
    "wanted",
]

#: The party of a private chat's one person (in a group, each member is their id).
USER = "user"
#: The layer's own entries (besides one per fact).
STATE_KEY = f"{AUTO_KEY_PREFIX}state"
LORE_KEY = f"{AUTO_KEY_PREFIX}lore"
#: The recent user messages kept for lore to scan (a book scans at most this many; the
#: buddy's replies are kept besides, :func:`buddy.capabilities.lore.state.heard`).
RECENT_KEPT = 20
#: The messages whose appraisal the mood remembers having felt.
FELT_KEPT = 16
#: Reports kept per conversation, for the playground's context inspector.
REPORTS_KEPT = 50
#: The mood after each of the last messages that moved it, kept in ``auto:state`` for the
#: playground's plot: ``[platform time, anger, sadness, trust]``.
HISTORY_KEPT = 48
#: A group's state, within one memory text: the members it names and feels toward (those
#: who spoke last), the members whose points it keeps for the plot, and how many each.
MEMBERS_KEPT = 32
PLOTTED_MEMBERS = 8
GROUP_HISTORY_KEPT = 16


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
        texts: ``(name, text)`` of each part that went in: the card, the mood in words,
            the request, a lore entry's content (the last few reports only:
            :data:`~buddy.capabilities.companion.context.TEXTS_KEPT`).
        empty: ``(name, why)`` of each part of size 0.
    """

    event: str
    at: float
    settled: bool
    parts: tuple[tuple[str, int], ...]
    left_out: tuple[tuple[str, str], ...]
    budget: int
    texts: tuple[tuple[str, str], ...] = ()
    empty: tuple[tuple[str, str], ...] = ()


@dataclass
class Mind:
    """What the layer holds of one conversation in this process.

    Attributes:
        ledger: The facts, by memory key.
        moods: The character's state toward each party (:data:`USER`, or a group
            member's id); none yet toward a party that has not moved it.
        felt: The messages whose appraisal moved a mood.
        histories: ``[at, anger, sadness, trust]`` after each of them, per party (the
            last :data:`HISTORY_KEPT`).
        members: A group's members seen: id → the latest name the platform gave, the one
            who spoke last at the end (empty in a private chat).
        lore: The lore's counters; ``recent``: the messages it scans, ``(who, text)``.
        offered: The proposed fact the last prompt asked the model to ask about.
        asked: The fact the confirmation card on screen asks about.
        asked_member: In a group, the member that card asks (only they answer it).
        reconcile: Where the quarrel's ``speak_first`` stands: ``""`` (no quarrel, or
            not yet scheduled), ``scheduled`` (its subscription is open) or ``done`` (the
            buddy reached out; not again until this quarrel is over).
        stored: What the platform holds under the layer's keys (key → text).
        revision: The conversation's memory revision :attr:`stored` was read at (moved on
            when an event shows that every change since was this process's own), or
            ``None``: unknown, read back before the next message.
        written: The revisions the layer's own saves made since that read.
        unsaved: Whether the last save left something out (refused, or not reached).
        turn_done: Set when the running turn was committed.
        outcomes: What each fact of the last extractions did (newest last).
        dropped: What the extractor said that was not kept, and why (newest last).
        answers: ``(event id, raw answer)`` of each message the extractor model was asked
            about (the last :data:`REPORTS_KEPT`), for a recording of the conversation.
        reports: The context reports of the last turns.
        last_event: The event of the last turn.
        replied: The event whose reply lore counted last.
        pending: Event id → (its facts are taken in, they are stored).
    """

    ledger: dict[str, Entry] = field(default_factory=dict)
    moods: dict[str, Mood] = field(default_factory=dict)
    felt: tuple[str, ...] = ()
    histories: dict[str, list[list[float]]] = field(default_factory=dict)
    members: dict[str, str] = field(default_factory=dict)
    lore: LoreState = field(default_factory=LoreState)
    recent: list[Said] = field(default_factory=list)
    offered: str | None = None
    asked: str | None = None
    asked_member: str | None = None
    reconcile: str = ""
    stored: dict[str, str] = field(default_factory=dict)
    revision: int | None = None
    written: set[int] = field(default_factory=set)
    unsaved: bool = False
    turn_done: asyncio.Event = field(default_factory=asyncio.Event)
    outcomes: list[Outcome] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    answers: list[tuple[str, str]] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)
    last_event: str = ""
    replied: str = ""
    pending: dict[str, tuple[asyncio.Event, asyncio.Event]] = field(default_factory=dict)

    def spoke(self, member: str, name: str) -> None:
        """A group member spoke (under ``name``, the platform's latest): last in
        :attr:`members`. Past :data:`MEMBERS_KEPT` members the one who spoke longest ago
        is forgotten with the mood toward them (their facts stay, named by id), and only
        the last :data:`PLOTTED_MEMBERS` keep their plot's points."""
        self.members.pop(member, None)
        self.members[member] = name
        spoken = list(self.members)
        for gone in spoken[:-MEMBERS_KEPT]:
            del self.members[gone]
            self.moods.pop(gone, None)
        for unplotted in spoken[:-PLOTTED_MEMBERS]:
            self.histories.pop(unplotted, None)

    def names(self) -> dict[str, str]:
        """The members the card names, the one who spoke last first."""
        return dict(reversed(self.members.items()))


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
    moods: dict[str, Any] = dict(_mapping(state.get("moods")))
    if "mood" in state:
        moods[USER] = state["mood"]
    for party, mood in moods.items():  # a mood not stored yet stays as this process has it
        if character is not None and isinstance(mood, Mapping):
            with contextlib.suppress(TypeError, ValueError):
                mind.moods[str(party)] = Mood(**{k: float(v) for k, v in mood.items()})
    mind.felt = tuple(str(m) for m in state.get("felt", ()))
    histories: dict[str, Any] = dict(_mapping(state.get("histories")))
    if "history" in state:
        histories[USER] = state["history"]
    mind.histories = {str(party): _points(points) for party, points in histories.items()}
    # Members this process saw after the state was stored stay, the latest last.
    pairs = state.get("members")
    members = {
        str(pair[0]): str(pair[1])
        for pair in (pairs if isinstance(pairs, list) else [])
        if isinstance(pair, list) and len(pair) == 2
    }
    for member, name in mind.members.items():
        members.pop(member, None)
        members[member] = name
    mind.members = members
    asked = state.get("asked")
    mind.asked = asked if isinstance(asked, str) and asked in ledger else None
    asker = state.get("asked_member")
    mind.asked_member = asker if mind.asked is not None and isinstance(asker, str) else None
    reconcile = state.get("reconcile", "")
    mind.reconcile = reconcile if reconcile in ("", "scheduled", "done") else ""
    if lore:
        saved = _json(stored.get(LORE_KEY))
        mind.recent = recent_from(saved.get("recent"))
        try:  # either shape (before issue 23: `until`, `blocked`)
            mind.lore = state_from(saved)
        except (TypeError, ValueError):
            mind.lore = LoreState()


def wanted(mind: Mind, *, lore: bool) -> dict[str, str]:
    """The entries ``mind`` must have on the platform (key → text); ``lore``: the buddy
    has a lore book."""
    wanted = {key: encode(entry) for key, entry in mind.ledger.items()}
    state: dict[str, Any] = {"felt": list(mind.felt), "reconcile": mind.reconcile}
    # A private chat's state keeps its one shape (`mood`, `history`); a group's is by member.
    for party, mood in mind.moods.items():
        if party == USER:
            state["mood"] = asdict(mood)
        else:
            state.setdefault("moods", {})[party] = asdict(mood)
    for party, points in mind.histories.items():
        if points and party == USER:
            state["history"] = points
        elif points:
            state.setdefault("histories", {})[party] = points
    if mind.members:
        state["members"] = [[member, name] for member, name in mind.members.items()]
    if mind.asked is not None:
        state["asked"] = mind.asked
        if mind.asked_member is not None:
            state["asked_member"] = mind.asked_member
    if mind.moods or mind.asked is not None or mind.reconcile or mind.members:
        wanted[STATE_KEY] = _dump(state)  # else nothing to keep: no entry
    if lore:
        wanted[LORE_KEY] = _lore_text(mind)
    return wanted


def _lore_text(mind: Mind) -> str:
    """``auto:lore``: the counters and the recent messages, the oldest dropped until it
    fits one memory text (a dropped message is one a book no longer scans)."""
    recent = mind.recent
    while True:
        text = _dump(state_data(mind.lore) | {"recent": recent_data(recent)})
        if not recent or len(text.encode("utf-8")) <= MEMORY_TEXT_BYTES:
            return text
        recent = recent[1:]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _points(points: Any) -> list[list[float]]:
    """A history as stored: its well-formed points, the last :data:`HISTORY_KEPT`."""
    return [
        [float(v) for v in point]
        for point in (points if isinstance(points, list) else [])
        if isinstance(point, list) and len(point) == 4
    ][-HISTORY_KEPT:]


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
