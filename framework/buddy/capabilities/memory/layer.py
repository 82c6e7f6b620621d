"""The companion layer at run time: what the buddy remembers, feels and knows each turn.

One :class:`Companion` per running buddy that declares ``memory:``, ``character:`` or
``lore:`` (``Capability.layer``); the runtime calls it around every turn
(:class:`buddy.capabilities.turn.Layer`):

**before** the turn is built, a user's message is handed to extraction
(:class:`~buddy.capabilities.memory.queue.Extractions`: in order per conversation, one at
a time, off the reply path), and the turn waits at most ``memory.wait_ms`` for it; then
the person card (the ledger's kept and disputed facts), the character's state decayed to
the event's platform time, and the lore entries the recent messages trigger are given to
the persona templates, all within ``memory.budget`` — plus, in the system prompt, a
proposed fact to ask about, or the reconcile of a quarrel.

**An extraction** (one user message): an answer to the layer's confirmation card
confirms or drops the fact it asked about; otherwise the relations' ``patterns`` run (no
model call) and, when they found nothing or the character needs an appraisal, the
extractor model is asked once. What it answers is held to the declared relations
(:mod:`~buddy.capabilities.memory.extract`), then each fact goes through its relation's
policy (:mod:`~buddy.capabilities.memory.ledger`), the ledger is kept within its share,
and the appraisal moves the mood. Everything is keyed by the event id, so a redelivered
event or a re-run turn applies nothing twice.

**Storage** is the conversation's platform memory, under ``auto:`` keys: one entry per
fact (its own write, so a process killed mid-extraction leaves every fact whole),
``auto:state`` (mood, the messages it has felt, the card asked, the reconcile) and
``auto:lore`` (the lore's turn counters and the recent user messages it scans). Deleting
the conversation deletes them with it.

**The one-turn data-visibility rule.** The layer's inputs are what the user typed —
never the model's output, so nothing a model wrote after reading user data can reach
memory, the card, the state or lore. And no write of the layer happens while a turn that
read user data is running: a job that gets to its writes then waits until that turn is
committed (its facts are already in the prompt of the next turn, from this process).

**speak_first**: when a message leaves the buddy in a quarrel, a one-time proactive
subscription (:data:`RECONCILE_KEY`, a schedule ``reconcile_after`` later) is made — the
platform's quiet hours, cooldown and daily limit apply as to any; a message that ends
the quarrel closes it; when it fires, the turn is told to reach out, and it is closed:
once per quarrel.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.prompt import mood_context
from buddy.capabilities.character.state import Appraisal, Mood, decayed, felt, quarrel, start
from buddy.capabilities.lore.compiled import Lore
from buddy.capabilities.lore.limits import SCAN_TEXT_CHARS
from buddy.capabilities.lore.prompt import scanned_context
from buddy.capabilities.lore.scan import LoreState, scan
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.conversation import Memory
from buddy.capabilities.memory.extract import (
    Extracted,
    extractor_prompt,
    from_model,
    from_patterns,
)
from buddy.capabilities.memory.ledger import (
    Entry,
    Outcome,
    apply,
    confirm,
    decode,
    encode,
    evict,
    expire,
)
from buddy.capabilities.memory.limits import (
    ASKS_MAX,
    AUTO_KEY_PREFIX,
    BUDGET_CHARS,
    CARD_CHARS,
    SHARE_BYTES,
    SHARE_ENTRIES,
    WAIT_MS,
)
from buddy.capabilities.memory.prompt import ledger_context
from buddy.capabilities.proactive.conversation import ProactiveService
from buddy.capabilities.turn import Layered
from buddy.errors import PlatformError, ToolError
from buddy.models.base import Message, ModelRequest

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint
    from buddy.models.base import Model, ModelSpec
    from buddy.platform.api import PlatformClient

__all__ = [
    "CONFIRM_NO",
    "CONFIRM_YES",
    "LORE_KEY",
    "RECONCILE_KEY",
    "STATE_KEY",
    "Companion",
    "Mind",
    "Report",
    "make",
]

log = logging.getLogger("buddy.memory")

#: The options of the card that asks whether to keep a proposed fact.
CONFIRM_YES = "记住吧"
CONFIRM_NO = "不用记"
#: The layer's own entries (besides one per fact).
STATE_KEY = f"{AUTO_KEY_PREFIX}state"
LORE_KEY = f"{AUTO_KEY_PREFIX}lore"
#: The proactive subscription of ``speak_first``.
RECONCILE_KEY = "companion.reconcile"
#: The recent user messages kept for lore to scan (a book scans at most this many).
RECENT_KEPT = 20
#: The messages whose appraisal the mood remembers having felt.
FELT_KEPT = 16
#: How long a committed turn's acknowledgement waits for its facts to be stored (seconds).
SAVE_WAIT = 10.0
#: Reports kept per conversation, for the playground's context inspector.
REPORTS_KEPT = 50
#: The mood after each of the last messages that moved it, kept in ``auto:state`` for the
#: playground's plot: ``[platform time, anger, sadness, trust]``.
HISTORY_KEPT = 48
_DEFAULTS = AutoMemory(
    auto=False,
    model=None,
    relations=(),
    card_chars=CARD_CHARS[0],
    budget_chars=BUDGET_CHARS[0],
    wait_ms=WAIT_MS[0],
    asks=ASKS_MAX[0],
    share_entries=SHARE_ENTRIES[0],
    share_bytes=SHARE_BYTES[0],
)


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


def make(
    blueprint: Blueprint, client: PlatformClient, model: Model, layer_model: Model | None
) -> Companion | None:
    """The layer for ``blueprint`` (``None`` when it declares none of memory, character
    and lore). Its extractor is ``layer_model`` if given, else a model of its own made
    from ``memory.model``, else from the run's model — and from the run's model whenever a
    profile or ``--model`` chose it (an environment swaps every model) —
    never the turn's ``model`` object itself, so a scripted model that runs the turns is
    not also asked to extract. It is made when first needed (a cached start imports no
    model stack); one that cannot be made (its API key is missing) is logged once as a
    warning, and messages are then taken by the relations' patterns only.
    """
    sections = blueprint.sections
    memory = sections.get("memory")
    character = sections.get("character")
    lore = sections.get("lore")
    if memory is None and character is None and lore is None:
        return None
    # memory.model is the manifest's choice; a profile or --model replaces every model of
    # the run (CI's `test`, a local model in dev), the extractor's too.
    named = memory.model if isinstance(memory, AutoMemory) else None
    if blueprint.model_origin != "manifest":
        named = None
    return Companion(
        client,
        memory if isinstance(memory, AutoMemory) else _DEFAULTS,
        character if isinstance(character, CharacterSpec) else None,
        lore if isinstance(lore, Lore) else None,
        layer_model,
        spec=named or blueprint.model,
        buddy=blueprint.name,
    )


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


class Companion:
    """The companion layer of one running buddy (see the module's docstring).

    Attributes:
        calls: Extractor model calls made; ``messages``: user messages extracted.
        dropped: Items of extractor answers dropped as invalid.
    """

    def __init__(
        self,
        client: PlatformClient,
        memory: AutoMemory,
        character: CharacterSpec | None,
        lore: Lore | None,
        extractor: Model | None,
        *,
        spec: ModelSpec | None = None,
        buddy: str = "",
    ) -> None:
        from buddy.capabilities.memory.queue import Extractions

        self.client = client
        self.memory = memory
        self.character = character
        self.lore = lore
        self.extractor = extractor
        self._spec = spec
        self._buddy = buddy
        self._owned = False  # the extractor was made here (so it is closed here)
        self.jobs = Extractions()
        self.minds: dict[str, Mind] = {}
        self._loading: dict[str, asyncio.Task[Mind]] = {}
        self.calls = 0
        self.messages = 0
        self.dropped = 0
        self._prompt = extractor_prompt(memory, appraise=character is not None)

    # ----------------------------------------------------------------- the turn

    async def before(self, conversation: Any, event: Any) -> Layered:
        """Take the event in, wait for its extraction at most ``wait_ms``, and give the
        turn its context (see the module's docstring). Never raises: a layer that cannot
        read its memory gives the turn what it knew before."""
        cid = conversation.id
        try:
            mind = await self._mind(conversation)
        except PlatformError as exc:
            log.warning("automatic memory of %s could not be read: %s", cid, exc)
            mind = self.minds.setdefault(cid, Mind())
        mind.turn_done.set()  # a turn starting means the one before is over
        mind.turn_done = asyncio.Event()
        text = str(event.payload.get("text") or "") if event.type == "message" else ""
        again = event.id == mind.last_event  # the same event run again: taken in already
        mind.last_event = str(event.id)
        ready = asyncio.Event()  # the message's facts are in the mind (writes may go on)
        ready.set()
        if text and not again:
            mind.recent = [*mind.recent, text[:SCAN_TEXT_CHARS]][-RECENT_KEPT:]
            if self.memory.auto or self.character is not None or mind.asked is not None:
                ready.clear()
                saved = asyncio.Event()
                mind.pending[str(event.id)] = (ready, saved)
                self.jobs.submit(
                    cid, lambda: self._extract(conversation, mind, event, text, ready, saved)
                )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ready.wait(), self.memory.wait_ms / 1000)
        return self._layered(conversation, mind, event, ready.is_set())

    async def after(self, conversation: Any, event: Any, turn: Mapping[str, Any]) -> None:
        """The turn was committed: the layer's deferred writes may go on; a confirmation
        card the model sent is remembered; a reconcile that spoke is done. When the
        message's facts were taken in time, this waits (at most :data:`SAVE_WAIT`) for
        them to be written, so the event is acknowledged only once they are stored: a
        process that dies before has its event delivered again, and applies it then.
        Facts still being extracted are not waited for — the conversation goes on."""
        mind = self.minds.get(conversation.id)
        if mind is None:
            return
        ready, saved = mind.pending.pop(str(event.id), (None, None))
        question = turn.get("question")
        if isinstance(question, Mapping) and list(question.get("options") or []) == [
            CONFIRM_YES,
            CONFIRM_NO,
        ]:
            mind.asked = mind.offered or _first_offer(self.memory, mind)
        mind.turn_done.set()
        if event.type == "proactive" and event.payload.get("subscription_key") == RECONCILE_KEY:
            self.jobs.submit(conversation.id, lambda: self._reconciled(conversation, mind))
        self.jobs.submit(conversation.id, lambda: self._save(conversation, mind))
        if ready is not None and saved is not None and ready.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(saved.wait(), SAVE_WAIT)

    def closed(self, conversation_id: str) -> None:
        """Forget the conversation (it is read again from the platform when it returns)."""
        self.minds.pop(conversation_id, None)

    def inspect(self, conversation_id: str) -> dict[str, Any]:
        """The context reports of the conversation's last turns (newest last), what its
        last extractions did and dropped, and the layer's counters."""
        mind = self.minds.get(conversation_id)
        counters = {"calls": self.calls, "messages": self.messages, "dropped": self.dropped}
        counters["failures"] = self.jobs.failures
        if mind is None:
            return {"counters": counters}
        return {
            "counters": counters,
            "reports": [
                {
                    "event": r.event,
                    "at": r.at,
                    "settled": r.settled,
                    "budget": r.budget,
                    "parts": [{"name": n, "chars": c} for n, c in r.parts],
                    "left_out": [{"name": n, "reason": why} for n, why in r.left_out],
                }
                for r in mind.reports
            ],
            "outcomes": [{"kind": o.kind, "key": o.key, "reason": o.reason} for o in mind.outcomes],
            "dropped": list(mind.dropped),
        }

    async def settled(self) -> None:
        """Wait until every conversation's jobs are done (a closed conversation's too)."""
        await self.jobs.drained()

    async def close(self) -> None:
        """Cancel the jobs not yet done (their messages add no memory); close the
        extractor the layer made itself."""
        await self.jobs.close()
        if self._owned and self.extractor is not None:
            await self.extractor.aclose()

    # ----------------------------------------------------------------- context

    def _layered(self, conversation: Any, mind: Mind, event: Any, settled: bool) -> Layered:
        now = float(event.created_at)
        budget = self.memory.budget_chars
        parts: list[tuple[str, int]] = []
        left: list[tuple[str, str]] = []
        context: dict[str, Any] = {}
        prompt = ""
        card = ledger_context(self.memory, expire(mind.ledger, now).values())
        used = len(card["card"])
        if self.memory.relations:
            context["memory"] = card
            parts.append(("memory.card", used))
        if self.character is not None:
            mood = mind.mood or start(self.character, now)
            mood = decayed(mood, self.character, now)
            context["character"] = mood_context(self.character, mood)
            parts.append(("character", 0))
        reconcile = event.type == "proactive" and (
            event.payload.get("subscription_key") == RECONCILE_KEY
        )
        if reconcile:
            prompt = _RECONCILE
        else:
            prompt, mind.offered = _ask(self.memory, mind, now)
        if prompt:
            if used + len(prompt) <= budget:
                used += len(prompt)
                parts.append(("ask" if not reconcile else "reconcile", len(prompt)))
            else:
                left.append(("ask", "budget"))
                prompt, mind.offered = "", None
        if self.lore is not None:
            scanned = scan(self.lore, mind.recent, mind.lore, max(0, budget - used))
            mind.lore = scanned.state
            context["lore"] = scanned_context(scanned)
            parts.extend((f"lore:{e.id}", len(e.content)) for e in scanned.entries)
            left.extend((f"lore:{e.id}", why) for e, why in scanned.left_out)
        report = Report(str(event.id), now, settled, tuple(parts), tuple(left), budget)
        mind.reports = [*mind.reports, report][-REPORTS_KEPT:]
        return Layered(context, prompt)

    # ----------------------------------------------------------------- extraction

    async def _extract(
        self,
        conversation: Any,
        mind: Mind,
        event: Any,
        text: str,
        ready: asyncio.Event,
        saved: asyncio.Event,
    ) -> None:
        """One user message: confirm, or extract and apply (then ``ready`` is set: the
        turn waiting for it goes on); then store (then ``saved``)."""
        now = float(event.created_at)
        message = str(event.id)
        try:
            try:
                await self._take(conversation, mind, text, now, message)
            finally:
                ready.set()  # done or failed: the turn goes on with what is known
            await self._reconcile(conversation, mind, now)
            await self._save(conversation, mind)
        finally:
            saved.set()  # stored, or nothing to store after a failure

    async def _take(
        self, conversation: Any, mind: Mind, text: str, now: float, message: str
    ) -> None:
        """The message's facts into the mind: an answer to the card, or extraction."""
        await self._refresh(conversation, mind)
        self.messages += 1
        answer = text.strip()
        if mind.asked is not None and answer in (CONFIRM_YES, CONFIRM_NO):
            book, outcome = confirm(
                self.memory,
                mind.ledger,
                mind.asked,
                answer == CONFIRM_YES,
                now=now,
                message=message,
            )
            mind.ledger, mind.asked = book, None
            mind.outcomes = [*mind.outcomes, outcome][-REPORTS_KEPT:]
        else:
            extracted = await self._facts(text)
            self._apply(mind, extracted, now, message)
        mind.ledger, gone = evict(self.memory, mind.ledger, now)
        if gone:
            log.info("automatic memory of %s evicted %d facts", conversation.id, len(gone))

    async def _facts(self, text: str) -> Extracted:
        """The message's facts and appraisal: patterns first, the model once if needed."""
        wants_facts = self.memory.auto and bool(self.memory.relations)
        found = from_patterns(self.memory, text) if wants_facts else Extracted()
        if self.character is None and (found.facts or not wants_facts):
            return found
        extractor = self._extractor()
        if extractor is None:
            return found
        self.calls += 1
        response = await extractor.request(
            ModelRequest(system=self._prompt, messages=(Message("user", text[:2000]),))
        )
        said = from_model(self.memory, response.text)
        if not wants_facts:
            said = replace(said, facts=())
        keys = {(f.relation, json.dumps(f.slots, sort_keys=True)) for f in found.facts}
        extra = [
            f for f in said.facts if (f.relation, json.dumps(f.slots, sort_keys=True)) not in keys
        ]
        return Extracted((*found.facts, *extra), said.appraisal, (*found.dropped, *said.dropped))

    def _apply(self, mind: Mind, extracted: Extracted, now: float, message: str) -> None:
        self.dropped += len(extracted.dropped)
        mind.dropped = [*mind.dropped, *extracted.dropped][-REPORTS_KEPT:]
        for fact in extracted.facts:
            mind.ledger, outcome = apply(self.memory, mind.ledger, fact, now=now, message=message)
            mind.outcomes = [*mind.outcomes, outcome][-REPORTS_KEPT:]
        if self.character is not None and message not in mind.felt:
            mood = mind.mood or start(self.character, now)
            raw = extracted.appraisal or {}
            appraisal = Appraisal(
                offence=float(raw.get("offence", 0.0)),
                apology=float(raw.get("apology", 0.0)),
                care=float(raw.get("care", 0.0)),
                explained=bool(raw.get("explained", False)),
            )
            mind.mood = m = felt(mood, self.character, appraisal, now)
            mind.felt = (*mind.felt, message)[-FELT_KEPT:]
            point = [round(now, 3), *(round(v, 4) for v in (m.anger, m.sadness, m.trust))]
            mind.history = [*mind.history, point][-HISTORY_KEPT:]

    def _extractor(self) -> Model | None:
        """The extractor, made from its spec on first use (``None``: it cannot be)."""
        if self.extractor is None and self._spec is not None:
            from buddy.errors import ModelConfigError
            from buddy.models.registry import resolve

            spec, self._spec = self._spec, None  # tried once
            try:
                self.extractor = resolve(spec)
                self._owned = True
            except ModelConfigError as exc:
                log.warning(
                    "%s: automatic memory's extractor cannot be used (%s); messages are taken"
                    " by the relations' patterns only, and the character's state does not move",
                    self._buddy,
                    exc,
                )
        return self.extractor

    async def _reconcile(self, conversation: Any, mind: Mind, now: float) -> None:
        spec = self.character
        if spec is None or mind.mood is None or conversation.kind != "private":
            return
        if not spec.flag("speak_first"):
            return
        angry = quarrel(mind.mood)
        if angry == bool(mind.reconcile):  # scheduled or done while angry; calm and none
            return
        await self._quiet(conversation, mind)
        proactive = ProactiveService(self.client, conversation.id)
        try:
            if angry:
                await proactive.subscribe(
                    RECONCILE_KEY,
                    {
                        "title": "闹别扭之后先开口",
                        "reason": "上次聊天闹得不愉快，过了一阵还没和好，主动找对方说说话。",
                        "trigger": {
                            "type": "schedule",
                            "at": _iso(now + spec.reconcile_seconds),
                        },
                    },
                )
            elif mind.reconcile == "scheduled":  # made up before the buddy reached out
                await proactive.unsubscribe(RECONCILE_KEY)
        except (PlatformError, ToolError) as exc:
            log.warning("the reconcile of %s could not be scheduled: %s", conversation.id, exc)
            return
        mind.reconcile = "scheduled" if angry else ""

    async def _reconciled(self, conversation: Any, mind: Mind) -> None:
        """The reconcile turn ran: once per quarrel, so its subscription is closed."""
        await ProactiveService(self.client, conversation.id).unsubscribe(RECONCILE_KEY)
        mind.reconcile = "done"

    # ----------------------------------------------------------------- storage

    async def _mind(self, conversation: Any) -> Mind:
        cid = conversation.id
        mind = self.minds.get(cid)
        if mind is not None:
            return mind
        loading = self._loading.get(cid)
        if loading is None:
            loading = asyncio.ensure_future(self._load(conversation))
            self._loading[cid] = loading
        try:
            mind = await asyncio.shield(loading)
        finally:
            self._loading.pop(cid, None)
        return self.minds.setdefault(cid, mind)

    async def _load(self, conversation: Any) -> Mind:
        mind = Mind()
        await self._refresh(conversation, mind, lore=True)
        return mind

    async def _refresh(self, conversation: Any, mind: Mind, *, lore: bool = False) -> None:
        """Read the layer's entries back (the platform's memory is the truth: a fact
        forgotten in the playground, or another process's write, is seen here)."""
        entries = await Memory(self.client, conversation.id).list()
        stored = {
            str(e["key"]): str(e["text"])
            for e in entries
            if str(e["key"]).startswith(AUTO_KEY_PREFIX)
        }
        mind.stored = stored
        ledger: dict[str, Entry] = {}
        for key, text in stored.items():
            if key in (STATE_KEY, LORE_KEY):
                continue
            entry = decode(text)
            if entry is not None and self.memory.relation(entry.relation) is not None:
                ledger[key] = entry
        mind.ledger = ledger
        state = _json(stored.get(STATE_KEY))
        mood = state.get("mood")
        if self.character is not None and isinstance(mood, Mapping):
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

    def _wanted(self, mind: Mind) -> dict[str, str]:
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
        if self.lore is not None:
            wanted[LORE_KEY] = _dump(
                {
                    "turn": mind.lore.turn,
                    "until": dict(mind.lore.until),
                    "blocked": dict(mind.lore.blocked),
                    "recent": mind.recent,
                }
            )
        return wanted

    async def _quiet(self, conversation: Any, mind: Mind) -> None:
        """Wait while a turn that read user data is running (its commit sets
        ``turn_done``): the layer writes nothing in the rest of such a turn."""
        while conversation.turn.data_read and not mind.turn_done.is_set():
            await mind.turn_done.wait()

    async def _save(self, conversation: Any, mind: Mind) -> None:
        """Write what changed, one entry at a time (each whole), and delete what went."""
        wanted = self._wanted(mind)
        changes = [(k, t) for k, t in wanted.items() if mind.stored.get(k) != t]
        gone = [k for k in mind.stored if k not in wanted]
        if not changes and not gone:
            return
        await self._quiet(conversation, mind)
        memory = Memory(self.client, conversation.id)
        for key in gone:
            await memory.delete_reserved(key)
            mind.stored.pop(key, None)
        # Facts before the state, so the state never names a fact that is not stored.
        for key, text in sorted(changes, key=lambda c: c[0] in (STATE_KEY, LORE_KEY)):
            try:
                await memory.write_reserved(key, text)
            except PlatformError as exc:  # full, say: no new memory, the rest goes on
                log.warning(
                    "automatic memory of %s not written (%s): %s", conversation.id, key, exc
                )
                continue
            mind.stored[key] = text


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


def _first_offer(memory: AutoMemory, mind: Mind) -> str | None:
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
