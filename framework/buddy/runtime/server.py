"""The buddy server: one process per buddy identity, running every conversation.

At start each capability uploads what the platform must know of the buddy (the data
declaration, even when empty, and the widget types; a failed upload fails the start),
then it takes events from the gateway. Each conversation is
built on its first event — persona rendered for it, history rebuilt from the platform's
summary and recent turns — handles its events one at a time (a message arriving
mid-turn waits its turn), and is recycled after 30 idle minutes, writing a compaction
summary when its history grew long. Every event is acknowledged after its turn was
committed, so a crash re-runs it and the platform's idempotent commit shows the user
nothing twice.

Platform trouble is met in two layers. A build or a commit that fails transiently (the
platform unreachable, too slow, or answering 5xx) is tried again a few times within the
turn. A turn that still failed that way is run again a little later by this process: the
gateway only redelivers on a new connection, and a healthy websocket may never drop. When
those runs fail too, or the failure was not transient, the event is left unacknowledged
for the platform to deliver again on the next connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from buddy.compile.blueprint import Blueprint
from buddy.errors import PlatformError, SupersededError
from buddy.extend import (
    conversation_layers,
    start,
)
from buddy.models.base import Message, Model
from buddy.platform.api import PlatformClient
from buddy.platform.conversation import prepare
from buddy.platform.protocol.events import Event
from buddy.runtime import history
from buddy.runtime.history import records_to_messages, summarised
from buddy.runtime.hooks import HookRunner
from buddy.runtime.loop import AgentEvent, AgentLoop
from buddy.runtime.state import RuntimeConversation
from buddy.runtime.tools import build_tools
from buddy.runtime.turn import TurnRunner

__all__ = ["Buddy", "BuddyServer", "records_to_messages"]  # the last: runtime.history's

log = logging.getLogger("buddy.runtime")

IDLE_SECONDS = 30 * 60
PLATFORM_ATTEMPTS = 4  # a build or a commit, on transient failures: attempts in all
PLATFORM_BACKOFF = 0.5  # seconds before the second attempt, doubled per attempt
TURN_RETRIES = 3  # a turn that failed transiently is run again this many times
TURN_RETRY_BACKOFF = 1.0  # seconds before the first run again, doubled per run

T = TypeVar("T")


def _transient(exc: PlatformError) -> bool:
    """Whether trying again may help: the platform was unreachable, too slow, or failed (5xx)."""
    return exc.status == 0 or exc.status >= 500


class Buddy:
    """A compiled buddy bound to a platform and a model: what every conversation shares.

    Args:
        layer_model: The model of the conversation layers' own requests (automatic
            memory's extractor), instead of the one the manifest names.
    """

    def __init__(
        self,
        blueprint: Blueprint,
        client: PlatformClient,
        model: Model,
        *,
        layer_model: Model | None = None,
    ) -> None:
        self.blueprint = blueprint
        self.client = client
        self.model = model
        prepare(blueprint)  # what its conversations share (resources), read once
        self.loop = AgentLoop(model, build_tools(blueprint), HookRunner(blueprint))
        self.layers = conversation_layers(blueprint, client, model, layer_model)
        self.turns = TurnRunner(blueprint, self.loop, self.layers)

    async def start(self) -> None:
        """Tell the platform what it must know of the buddy: every capability's start-up
        part, in registry order (the data declaration, even empty; the widget types).

        Raises:
            PlatformError: An upload failed; the buddy must not start.
        """
        await start(self.client, self.blueprint)


@dataclass
class _Session:
    conversation: RuntimeConversation
    group: bool
    summary: str = ""
    covers_until: float = 0.0
    history: list[Message] = field(default_factory=list)
    turns: int = 0
    queue: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)
    last_active: float = field(default_factory=time.monotonic)
    worker: asyncio.Task[None] | None = None


class BuddyServer:
    """Runs a buddy's conversations against a platform.

    Args:
        buddy: The buddy.
        idle_seconds: A conversation idle this long is recycled (and compacted).
        shutdown_deadline: Seconds in-flight turns get to finish on :meth:`stop`.
        on_event: Receives the agent loop's events (for terminals and playgrounds).
        buddy_id: The id the buddy must run as (``BUDDY_ID``): the platform's identity for
            the token must be it or its ``-dev`` form, else :meth:`run` stops before any
            turn with a :class:`~buddy.errors.PlatformError` naming both.
    """

    def __init__(
        self,
        buddy: Buddy,
        *,
        idle_seconds: float = IDLE_SECONDS,
        shutdown_deadline: float = 20.0,
        on_event: Callable[[str, AgentEvent], None] | None = None,
        buddy_id: str | None = None,
    ) -> None:
        self.buddy = buddy
        self.client = buddy.client
        self.idle_seconds = idle_seconds
        self.shutdown_deadline = shutdown_deadline
        self.on_event = on_event
        self.sessions: dict[str, _Session] = {}
        self._stopping = False
        self._stopped = asyncio.Event()  # wakes re-runs waiting out their backoff
        self._reader: asyncio.Task[None] | None = None
        self.buddy_id = buddy_id
        self.kinds = buddy.turns.kinds  # the event types capabilities turn into turns
        self._unknown: set[str] = set()  # the types none handles, warned about once each
        self._identity: PlatformError | None = None  # set when the identity is wrong
        self._identity_checked = buddy_id is None

    async def run(self) -> None:
        """Start, then handle events until :meth:`stop` or a supersede.

        Raises:
            SupersededError: Another process of this identity took over (logged as ERROR).
            PlatformError: The start-up upload failed, or the token is not ``buddy_id``'s.
        """
        await self.buddy.start()
        self._reader = asyncio.current_task()
        watcher = None if self._identity_checked else asyncio.create_task(self._watch_identity())
        try:
            async for event in self.client.events():
                if self._stopping:
                    break
                self._check_identity()  # the gateway's hello came before any event
                await self._dispatch(event)
        except asyncio.CancelledError:
            if self._identity is not None:
                await self._drain()
                raise self._identity from None
            if not self._stopping:
                raise
        except SupersededError:
            self._stopping = True
            await self._drain()
            raise
        finally:
            if watcher is not None:
                watcher.cancel()
        await self._drain()

    def _check_identity(self) -> None:
        """Raise when the platform's identity for the token is not ``buddy_id``'s."""
        if self._identity_checked:
            return
        identity = str(getattr(self.client, "identity", ""))
        if identity in (self.buddy_id, f"{self.buddy_id}-dev"):
            self._identity_checked = True
            return
        self._identity = PlatformError(
            0,
            f"BUDDY_ID is {self.buddy_id!r}, but the platform says the token belongs to "
            f"{identity!r}: refusing to run as another buddy (check BUDDY_ID and BUDDY_TOKEN)",
        )
        raise self._identity

    async def _watch_identity(self) -> None:
        """Check the identity as soon as the gateway said hello, even with no event."""
        while not getattr(self.client, "identity", ""):
            await asyncio.sleep(0.01)
        try:
            self._check_identity()
        except PlatformError:
            if self._reader is not None:
                self._reader.cancel()

    async def stop(self) -> None:
        """Stop taking turns; in-flight ones get ``shutdown_deadline`` seconds to finish."""
        self._stopping = True
        await self._drain()
        if self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()
        for layer in self.buddy.layers:
            await layer.close()
        await self.client.close()
        await self.buddy.model.aclose()

    async def _drain(self) -> None:
        self._stopped.set()  # a turn waiting to run again gives up: the next process runs it
        workers = [s.worker for s in self.sessions.values() if s.worker and not s.worker.done()]
        for session in self.sessions.values():
            session.queue.put_nowait(_STOP)
        if workers:
            _, pending = await asyncio.wait(workers, timeout=self.shutdown_deadline)
            for task in pending:
                log.error(
                    "a turn did not finish within %gs of shutdown; cancelled",
                    self.shutdown_deadline,
                )
                task.cancel()

    async def _dispatch(self, event: Event) -> None:
        if not self.buddy.turns.handles(event.type):
            await self._skip(event)
            return
        cid = event.conversation_id
        if cid is None:  # a turn needs a conversation: this event can never be handled
            log.warning(
                "event %s (%s) names no conversation; acknowledged and skipped",
                event.id,
                event.type,
            )
            await self.client.ack(event.id)
            return
        session = self.sessions.get(cid)
        if session is None or session.worker is None or session.worker.done():
            self.sessions.pop(cid, None)
            task = asyncio.create_task(self._conversation(cid, event))
            placeholder = _Session(RuntimeConversation(self.client, cid, "private"), False)
            placeholder.worker = task
            self.sessions[cid] = placeholder
            return
        session.queue.put_nowait(event)

    async def _skip(self, event: Event) -> None:
        """An event of a type no registered capability turns into a turn (a platform newer
        than this buddy, a capability not installed): warned about once per type in this
        process, acknowledged — it can never be handled here, and unacknowledged it would be
        delivered again on every connection — and skipped."""
        if event.type not in self._unknown:
            self._unknown.add(event.type)
            log.warning(
                "event type %r: no capability of this buddy handles it (it handles %s);"
                " its events are acknowledged and skipped, starting with %s",
                event.type,
                ", ".join(["message", *self.kinds]),
                event.id,
            )
        else:
            log.debug("event %s of unhandled type %r skipped", event.id, event.type)
        await self.client.ack(event.id)

    async def _conversation(self, cid: str, first: Event) -> None:
        """The conversation's worker: its events one at a time, in arrival order.

        A turn that failed transiently runs again here, before any later event of the
        conversation (they wait in the queue), so replies never come back out of order.
        """
        placeholder = self.sessions[cid]
        session = await self._built(cid, placeholder)
        if session is None:
            self._abandon(cid, placeholder, first)
            return
        session.queue = placeholder.queue
        session.worker = placeholder.worker
        self.sessions[cid] = session
        await self._safely(session, first)
        while True:
            try:
                event = await asyncio.wait_for(session.queue.get(), self.idle_seconds)
            except TimeoutError:
                await self._recycle(cid, session)
                return
            if event is _STOP:
                return
            await self._safely(session, event)

    async def _built(self, cid: str, placeholder: _Session) -> _Session | None:
        """The conversation's session; building is tried again after transient failures
        (its events wait meanwhile); ``None`` when it cannot be built."""
        for run in range(TURN_RETRIES + 1):
            try:
                return await self._retrying(
                    f"building conversation {cid}", lambda: self._build(cid)
                )
            except Exception as exc:
                if not isinstance(exc, PlatformError):  # a malformed answer, say: show where
                    log.exception("cannot build conversation %s", cid)
                if not await self._again(run, exc, f"cannot build conversation {cid}"):
                    return None
        return None

    def _abandon(self, cid: str, placeholder: _Session, first: Event) -> None:
        """Leave the events of a conversation that cannot be built unacknowledged."""
        if self.sessions.get(cid) is placeholder:
            del self.sessions[cid]
        waiting = [first]
        while not placeholder.queue.empty():
            waiting.append(placeholder.queue.get_nowait())
        for event in waiting:
            if event is not _STOP:
                self._give_up(event, f"cannot build conversation {cid}")

    async def _safely(self, session: _Session, event: Event) -> None:
        """Handle one event; a transient platform failure runs it again (a few times, with
        backoff) before the next event; otherwise it is left unacknowledged."""
        for run in range(TURN_RETRIES + 1):
            try:
                await self._handle(session, event)
                return
            except Exception as exc:
                if not isinstance(exc, PlatformError):  # a bug, not the platform: show where
                    log.exception("the turn for event %s raised", event.id)
                what = f"the turn for event {event.id} failed"
                if not await self._again(run, exc, what):
                    self._give_up(event, f"{what}: {exc}")
                    return

    async def _again(self, run: int, exc: Exception, what: str) -> bool:
        """Wait before running again after failure ``exc`` of run ``run`` (0-based);
        ``False`` when it must not run again (not transient, too many runs, stopping)."""
        if not (
            isinstance(exc, PlatformError)
            and _transient(exc)
            and run < TURN_RETRIES
            and not self._stopping
        ):
            return False
        delay = TURN_RETRY_BACKOFF * 2**run
        log.warning("%s: %s; running it again in %.1fs", what, exc, delay)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopped.wait(), delay)
        return not self._stopping

    def _give_up(self, event: Event, what: str) -> None:
        log.error(
            "%s; event %s stays unacknowledged: the platform delivers it again on the"
            " next connection",
            what,
            event.id,
        )
        # Until now the event counted as in progress, so a redelivery was dropped.
        self.client.forget(event.id)

    async def _retrying(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """``call()``, tried again after transient platform failures (see :func:`_transient`).

        Raises:
            PlatformError: A refusal (4xx), or the last of ``PLATFORM_ATTEMPTS`` failures.
        """
        for attempt in range(PLATFORM_ATTEMPTS - 1):
            try:
                return await call()
            except PlatformError as exc:
                if not _transient(exc):
                    raise
                delay = PLATFORM_BACKOFF * 2**attempt
                log.warning("%s failed: %s; trying again in %.1fs", what, exc, delay)
                await asyncio.sleep(delay)
        return await call()

    async def _build(self, cid: str) -> _Session:
        info = await self.client.conversation_info(cid)
        kind = info["kind"]
        members = {m["member_id"]: m["name"] for m in info["members"]}
        conversation = RuntimeConversation(
            self.client,
            cid,
            kind,
            blueprint=self.buddy.blueprint,
            members=members,
        )
        session = _Session(conversation, group=kind == "group")
        summary = await self.client.get_summary(cid)
        if summary is not None:
            session.summary = str(summary["text"])
            session.covers_until = float(summary["covers_until"])
        await self._load_history(session)
        for part in conversation.parts.values():
            await part.opened(kind)
        return session

    async def _load_history(self, session: _Session) -> None:
        """The model history: the stored turns after the summary (the most recent ones)."""
        records = await self.client.turns(session.conversation.id, session.covers_until)
        recent = list(records)[-history.KEEP_RECENT_TURNS * 3 :]
        session.history = records_to_messages(recent, group=session.group)

    async def _handle(self, session: _Session, event: Event) -> None:
        session.last_active = time.monotonic()
        conversation = session.conversation
        listener = self.on_event
        emit = (lambda e: listener(conversation.id, e)) if listener is not None else None
        turn = await self.buddy.turns.run(
            conversation,
            event,
            session.history,
            self._commit,
            summary=session.summary,
            emit=emit,
        )
        outcome, committed = turn.outcome, turn.committed
        status = committed.get("status")
        if status == "duplicate":
            # Committed before — by an attempt whose answer was lost, or by an earlier run
            # of this turn: what the user saw is the stored turn, not necessarily this one.
            try:
                await self._load_history(session)
            except PlatformError as exc:
                log.warning("could not reload the history of %s: %s", conversation.id, exc)
                session.history.extend(outcome.messages)
        elif status != "skipped":
            # A proactive reply the gates stopped at commit time was never seen: not history.
            session.history.extend(outcome.messages)
        session.turns += 1
        await self.client.ack(event.id)
        if session.turns >= history.COMPACT_AFTER_TURNS:
            await self._compact(session)

    async def _commit(self, cid: str, turn: dict[str, Any]) -> Mapping[str, Any]:
        """Commit a turn, retrying transient failures (the commit is idempotent on the event).

        Returns:
            The platform's answer.

        Raises:
            PlatformError: The platform refused the commit, or kept failing.
        """
        answer = await self._retrying(
            f"committing the turn for event {turn['event_id']}",
            lambda: self.client.commit_turn(cid, turn),
        )
        return dict(answer or {})

    async def _recycle(self, cid: str, session: _Session) -> None:
        await self._compact(session)
        if self.sessions.get(cid) is session:
            del self.sessions[cid]
            for layer in self.buddy.layers:
                layer.closed(cid)

    async def _compact(self, session: _Session) -> None:
        """Summarise all but the recent turns into the platform's summary.

        Never raises a platform failure: the turn before it was acknowledged already, and
        a conversation that could not be compacted keeps its raw turns.
        """
        try:
            records = await self.client.turns(session.conversation.id, session.covers_until)
        except PlatformError as exc:
            log.warning(
                "could not read the turns of %s to compact them: %s", session.conversation.id, exc
            )
            return
        if len(records) <= history.KEEP_RECENT_TURNS:
            return
        older = records[: -history.KEEP_RECENT_TURNS]
        text = summarised(session.summary, older, group=session.group, kinds=self.kinds)
        covers_until = float(older[-1]["created_at"])
        try:
            await self.client.put_summary(session.conversation.id, text, covers_until)
        except PlatformError as exc:
            log.warning("could not write the summary of %s: %s", session.conversation.id, exc)
            return
        session.summary = text
        session.covers_until = covers_until
        recent = [r for r in records if float(r["created_at"]) > covers_until]
        session.history = records_to_messages(recent, group=session.group)
        session.turns = 0


_STOP: Any = object()
