"""The companion engine at run time: what the buddy remembers, feels and knows each turn.

One :class:`Companion` per running buddy that declares ``memory:``, ``character:`` or
``lore:`` (``Capability.layer``); the runtime calls it around every turn
(:class:`buddy.extend.turn.Layer`):

**before** the turn is built, a user's message is handed to extraction
(:class:`~buddy.capabilities.companion.queue.Extractions`: in order per conversation, one
at a time, off the reply path), and the turn waits at most ``memory.wait_ms`` for it; then
the person card (the ledger's kept and disputed facts), the character's state decayed to
the event's platform time, and the lore entries the recent messages trigger are given to
the persona templates, all within ``memory.budget`` — plus, in the system prompt, a
proposed fact to ask about, or the reconcile of a quarrel.

**An extraction** (one user message): an answer to the layer's confirmation card
confirms or drops the fact it asked about; otherwise the relations' and the character's
appraisal ``patterns`` run (no model call) and, only when they found nothing, the
extractor model is asked once. What it answers is held to the declared relations
(:mod:`~buddy.capabilities.memory.extract`), then each fact goes through its relation's
policy (:mod:`~buddy.capabilities.memory.ledger`), the ledger is kept within its share,
and the appraisal moves the mood. Everything is keyed by the event id, so a redelivered
event or a re-run turn applies nothing twice.

**Storage** is the conversation's platform memory, under ``auto:`` keys
(:mod:`~buddy.capabilities.companion.mind`): one entry per fact, ``auto:state`` and
``auto:lore``, read back and saved by :mod:`~buddy.capabilities.companion.storage` — a
read only when the event's memory revision says someone else wrote, what a message
changed in one request the platform applies whole (one save per message: the extraction
saves once the turn's context is made, lore's turn included). Deleting the conversation
deletes them with it. The engine reads and writes through the conversation's own parts
(``conversation.memory``, ``conversation.proactive``), so what they refuse — a write in a
turn that read user data — the engine is refused too.

**The one-turn data-visibility rule.** The layer's inputs are what the user typed —
and, for a lore book that scans replies, the buddy's committed replies of turns that
read no user data — so nothing a model wrote after reading user data can reach memory,
the card, the state or lore. And no write of the layer happens while a turn that
read user data is running: the conversation's memory part refuses it, so a job that gets
to its writes then waits until that turn is committed (its facts are already in the
prompt of the next turn, from this process); a write refused all the same (a new turn read
data meanwhile) is made by the next save.

**In a group** each message is its sender's (``payload.sender``): a fact's ``user``
party is that member (stored as their ``m_…`` id, so each member's facts are their own),
the mood the turn sees and the appraisal moves is the one toward them, the card names
each member's facts under the latest name the platform gave (kept in ``auto:state``), and
a confirmation card is answered only by the member it asks — another member's
「记住吧」 is a message like any other. A private chat is as it always was.

**speak_first**: when a message leaves the buddy in a quarrel, a one-time proactive
subscription (:data:`RECONCILE_KEY`, a schedule ``reconcile_after`` later) is made — the
platform's quiet hours, cooldown and daily limit apply as to any; a message that ends
the quarrel closes it; when it fires, the turn is told to reach out, and it is closed:
once per quarrel.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.state import quarrel
from buddy.capabilities.companion.context import (
    CONFIRM_NO,
    CONFIRM_YES,
    RECONCILE_KEY,
    first_offer,
    layered,
    reconciling,
    speaker,
)
from buddy.capabilities.companion.extraction import apply_extracted, asked, patterned
from buddy.capabilities.companion.mind import (
    LORE_KEY,
    REPORTS_KEPT,
    STATE_KEY,
    USER,
    Mind,
    Report,
)
from buddy.capabilities.companion.storage import Storage, quiet
from buddy.capabilities.lore.compiled import Lore
from buddy.capabilities.lore.state import BUDDY, counted, heard
from buddy.capabilities.lore.state import USER as BY_USER
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.extract import Extracted, extractor_prompt
from buddy.capabilities.memory.ledger import confirm, evict, member_of
from buddy.capabilities.memory.limits import (
    ASKS_MAX,
    BUDGET_CHARS,
    CARD_CHARS,
    SHARE_BYTES,
    SHARE_ENTRIES,
    WAIT_MS,
)
from buddy.errors import PlatformError, ToolError
from buddy.extend.turn import Layered

if TYPE_CHECKING:
    from buddy.capabilities.proactive.conversation import ProactiveService
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

#: How long a committed turn's acknowledgement waits for its facts to be stored (seconds).
SAVE_WAIT = 10.0
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
        on_answer: Given each extractor answer (see :meth:`_answered`), when set.
        dropped: Items of extractor answers dropped as invalid.
        store: How the layer reads its entries back and saves them.
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
        from buddy.capabilities.companion.queue import Extractions

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
        self.store = Storage(memory, character, lore is not None)
        self._replies = lore is not None and any(b.scan_replies for b in lore.books)
        self._prompt = extractor_prompt(memory, appraise=character is not None)
        #: Called with ``(conversation id, event id, raw answer)`` after each extractor
        #: answer, by a session that keeps them (``buddy dev``, ``buddy chat``).
        self.on_answer: Callable[[str, str, str], Awaitable[None]] | None = None

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
        party, name = speaker(conversation.kind, event)
        if party != USER:  # the card names members by the latest name the platform gave
            mind.spoke(party, name or mind.members.get(party, ""))
        again = event.id == mind.last_event  # the same event run again: taken in already
        mind.last_event = str(event.id)
        ready = asyncio.Event()  # the message's facts are in the mind (writes may go on)
        ready.set()
        prompted = asyncio.Event()  # the turn's context is made (lore's turn counted)
        try:
            if event.type == "message" and not again:  # lore counts the message, scans its text
                mind.lore = counted(mind.lore)
            if text and not again:
                mind.recent = heard(mind.recent, BY_USER, text)
                if self.memory.auto or self.character is not None or mind.asked is not None:
                    ready.clear()
                    saved = asyncio.Event()
                    mind.pending[str(event.id)] = (ready, saved)
                    self.jobs.submit(
                        cid,
                        lambda: self._extract(
                            conversation, mind, event, text, party, (ready, prompted, saved)
                        ),
                    )
            await _within(ready, self.memory.wait_ms / 1000)
            return layered(
                self.memory, self.character, self.lore, mind, event, ready.is_set(), party
            )
        finally:
            prompted.set()

    async def after(self, conversation: Any, event: Any, turn: Mapping[str, Any]) -> None:
        """The turn was committed: the layer's deferred writes may go on; a confirmation
        card the model sent is remembered; a reconcile that spoke is done. When the
        message's facts were taken in time, or the turn sent the confirmation card, this
        waits (at most :data:`SAVE_WAIT`) for them to be written, so the event is
        acknowledged only once they are stored: a process that dies before has its event
        delivered again, and applies it then. Facts still being extracted are not waited
        for — the conversation goes on. The extraction's own save is the turn's; one more
        follows it only for what that one did not cover (the card, the reconcile, a late
        extraction, or a save that did not all land)."""
        mind = self.minds.get(conversation.id)
        if mind is None:
            return
        self._replied(mind, event, turn)
        ready, saved = mind.pending.pop(str(event.id), (None, None))
        question = turn.get("question")
        card = isinstance(question, Mapping) and list(question.get("options") or []) == [
            CONFIRM_YES,
            CONFIRM_NO,
        ]
        if card:
            party, _ = speaker(conversation.kind, event)
            asks = mind.offered or first_offer(self.memory, mind, party)
            # In a group the card asks the member whose turn sent it, and only they answer;
            # a card with nothing of theirs to ask leaves another member's standing card.
            if party == USER or asks is not None:
                mind.asked = asks
                mind.asked_member = None if party == USER else party
        mind.turn_done.set()
        in_time = ready is not None and ready.is_set()
        if reconciling(event):
            self.jobs.submit(conversation.id, lambda: self._reconciled(conversation, mind))
        elif in_time and saved is not None and not card:
            # The extraction saves once the turn's context is made: that save is the
            # turn's (lore's counters in it) — one more only for what did not land.
            await _within(saved, SAVE_WAIT)
            if saved.is_set() and not mind.unsaved:
                return
        stored = asyncio.Event()

        async def save() -> None:
            try:
                await self.store.save(conversation, mind)
            finally:
                stored.set()

        self.jobs.submit(conversation.id, save)
        # The user saw the card: what it asks about is stored before the turn is
        # acknowledged, or the click would find nothing to confirm after a restart.
        wait = stored if card else saved if in_time else None
        if wait is not None:
            await _within(wait, SAVE_WAIT)

    def _replied(self, mind: Mind, event: Any, turn: Mapping[str, Any]) -> None:
        """Lore counts the committed reply as a message of the conversation and, when a
        book scans replies, keeps its text — unless the turn read user data: what a model
        wrote after reading it never reaches lore. Stored with the next save."""
        reply = turn.get("reply")
        if self.lore is None or not isinstance(reply, str) or not reply:
            return
        if mind.replied == str(event.id):  # the same event run again: counted already
            return
        mind.replied = str(event.id)
        mind.lore = counted(mind.lore)
        if self._replies and not turn.get("data_read"):
            mind.recent = heard(mind.recent, BUDDY, reply)

    def closed(self, conversation_id: str) -> None:
        """Forget the conversation (it is read again from the platform when it returns)."""
        self.minds.pop(conversation_id, None)

    def inspect(self, conversation_id: str) -> dict[str, Any]:
        """The context reports of the conversation's last turns (newest last; each part's
        size, text and why it is empty), what its last extractions did and dropped, and
        the layer's counters."""
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
                    "texts": dict(r.texts),
                    "empty": dict(r.empty),
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

    # ----------------------------------------------------------------- extraction

    async def _extract(
        self,
        conversation: Any,
        mind: Mind,
        event: Any,
        text: str,
        party: str,
        signals: tuple[asyncio.Event, asyncio.Event, asyncio.Event],
    ) -> None:
        """One user message (from ``party``: :data:`USER`, or a group member): confirm, or
        extract and apply (then ``ready`` is set: the turn waiting for it goes on); then,
        once the turn's context is made (``prompted``: its lore turn is counted, so one
        save stores both), store (then ``saved``)."""
        ready, prompted, saved = signals
        try:
            try:
                await self._take(conversation, mind, event, text, party)
            finally:
                ready.set()  # done or failed: the turn goes on with what is known
            await self._reconcile(conversation, mind, float(event.created_at))
            await prompted.wait()  # set as `before` returns, whatever it returns
            await self.store.save(conversation, mind)
        finally:
            saved.set()  # stored, or nothing to store after a failure

    async def _take(self, conversation: Any, mind: Mind, event: Any, text: str, party: str) -> None:
        """The message's facts into the mind: an answer to the card (from the member it
        asks), or extraction."""
        now = float(event.created_at)
        message = str(event.id)
        await self.store.refresh(conversation, mind, event)
        self.messages += 1
        answer = text.strip()
        if (
            mind.asked is not None
            and answer in (CONFIRM_YES, CONFIRM_NO)
            and self._asks(mind, party)
        ):
            book, outcome = confirm(
                self.memory,
                mind.ledger,
                mind.asked,
                answer == CONFIRM_YES,
                now=now,
                message=message,
            )
            mind.ledger, mind.asked, mind.asked_member = book, None, None
            mind.outcomes = [*mind.outcomes, outcome][-REPORTS_KEPT:]
        else:
            heard: list[str] = []
            extracted = await self._facts(text, heard)
            if heard:
                await self._answered(conversation.id, mind, message, heard[-1])
            self._apply(mind, extracted, now, message, party)
        mind.ledger, gone = evict(self.memory, mind.ledger, now)
        if gone:
            log.info("automatic memory of %s evicted %d facts", conversation.id, len(gone))

    async def _facts(self, text: str, heard: list[str]) -> Extracted:
        """The message's facts and appraisal: patterns first, the model once if needed
        (its raw answer appended to ``heard``)."""
        found, needed = patterned(self.memory, self.character, text)
        extractor = self._extractor() if needed else None
        if extractor is None:
            return found
        self.calls += 1
        return await asked(self.memory, extractor, self._prompt, text, found, heard)

    async def _answered(self, cid: str, mind: Mind, message: str, answer: str) -> None:
        """Keep the extractor's raw answer for the message: in the mind (the last
        :data:`REPORTS_KEPT`) and with :attr:`on_answer`, when a session keeps them (the
        dev platform's record of the conversation, :mod:`buddy.testing.record`)."""
        mind.answers = [*mind.answers, (message, answer)][-REPORTS_KEPT:]
        if self.on_answer is None:
            return
        try:
            await self.on_answer(cid, message, answer)
        except Exception:  # a record kept for later must never cost the message its facts
            log.warning("the extractor's answer for %s could not be kept", message, exc_info=True)

    def _asks(self, mind: Mind, party: str) -> bool:
        """Whether the confirmation card on screen asks ``party``: in a group, the member
        it was sent to (or, for a card stored before members were kept, the member the fact
        is about); in a private chat, always."""
        entry = mind.ledger.get(mind.asked or "")
        spec = self.memory.relation(entry.relation) if entry is not None else None
        owner = member_of(spec, entry.slots) if spec is not None and entry is not None else None
        return (mind.asked_member or owner) in (None, party)

    def _apply(
        self, mind: Mind, extracted: Extracted, now: float, message: str, party: str = USER
    ) -> None:
        self.dropped += len(extracted.dropped)
        apply_extracted(self.memory, self.character, mind, extracted, now, message, party)

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
                    " by the relations' and the appraisal's patterns only",
                    self._buddy,
                    exc,
                )
        return self.extractor

    async def _reconcile(self, conversation: Any, mind: Mind, now: float) -> None:
        spec = self.character
        mood = mind.moods.get(USER)
        if spec is None or mood is None or conversation.kind != "private":
            return
        if not spec.flag("speak_first"):
            return
        angry = quarrel(mood)
        if angry == bool(mind.reconcile):  # scheduled or done while angry; calm and none
            return
        await quiet(conversation, mind)
        proactive: ProactiveService = conversation.parts["proactive"]
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
        proactive: ProactiveService = conversation.parts["proactive"]
        await proactive.unsubscribe(RECONCILE_KEY)
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
        await self.store.refresh(conversation, mind, lore=True)
        return mind


async def _within(done: asyncio.Event, seconds: float) -> None:
    """Wait at most ``seconds`` for ``done`` (no task made when it is set already)."""
    if done.is_set():
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await done.wait()
