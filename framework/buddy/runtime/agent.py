"""Run turns of a buddy in-process: ``Agent(blueprint).run(text)``.

For scripts, notebooks, benchmarks and unit tests of tools. Every platform capability
works, on the dev platform run inside this process (:class:`DetachedClient`, made on the
first platform call): memory, widgets, user data, proactive subscriptions — with the
platform's own code, limits and refusals.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from buddy.compile.blueprint import Blueprint
from buddy.errors import PlatformError
from buddy.extend import conversation_layers
from buddy.models.base import Message, Model
from buddy.platform.api import Json, PlatformClient
from buddy.platform.conversation import prepare
from buddy.runtime import history
from buddy.runtime.history import records_to_messages, summarised
from buddy.runtime.hooks import HookRunner
from buddy.runtime.loop import AgentEvent, AgentLoop, TurnOutcome
from buddy.runtime.state import RuntimeConversation
from buddy.runtime.tools import build_tools
from buddy.runtime.turn import Commit, LocalEvent, TurnRunner

if TYPE_CHECKING:
    from buddy.platform.dev.inprocess import InProcessPlatform
    from buddy.platform.protocol.events import Event

__all__ = ["Agent", "DetachedClient"]


class DetachedClient(PlatformClient):
    """The platform of :class:`Agent`: the dev platform, inside this process.

    The platform (:class:`~buddy.platform.dev.inprocess.InProcessPlatform`, an in-memory
    database) is made on the first call, with ``blueprint``'s buddy registered and started
    on it, so a run that never calls the platform costs nothing for it. A conversation id
    the caller makes up (``local-1``) becomes a private conversation there on its first
    call. Every call runs the dev platform's code: a request the platform would refuse
    raises the ``PlatformError`` — same status, same reason — a served buddy gets, so a
    test written with ``Agent`` fails where production would.

    Args:
        blueprint: The buddy whose start-up (data declaration, widget types) the platform
            runs; ``None`` for none.
    """

    def __init__(self, blueprint: Blueprint | None = None) -> None:
        self.blueprint = blueprint
        self._platform: InProcessPlatform | None = None
        self._opening = asyncio.Lock()
        self._conversations: dict[str, str] = {}

    async def platform(self) -> InProcessPlatform:
        """The in-process platform (made now if it was not): its ``dev()`` acts as users
        and the world — grant data, answer consent cards, advance the clock."""
        async with self._opening:
            if self._platform is None:
                from buddy.platform.dev.inprocess import InProcessPlatform

                self._platform = await InProcessPlatform.open(self.blueprint)
            return self._platform

    async def platform_id(self, cid: str) -> str:
        """The platform's id of the conversation the caller calls ``cid`` (made now if new)."""
        platform = await self.platform()
        async with self._opening:  # calls made in parallel share the first one's
            if cid not in self._conversations:
                self._conversations[cid] = await platform.conversation()
            return self._conversations[cid]

    async def request(
        self,
        method: str,
        path: str,
        *,
        cid: str | None = None,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        missing_ok: bool = False,
    ) -> Json:
        platform = await self.platform()
        on = await self.platform_id(cid) if cid is not None else None
        assert platform.client is not None
        return await platform.client.request(
            method, path, cid=on, body=body, params=params, missing_ok=missing_ok
        )

    async def events(self) -> AsyncIterator[Event]:  # pragma: no cover - nothing to receive
        raise PlatformError(
            501, "receiving events needs a served platform: `buddy chat` or `buddy run`"
        )
        yield

    async def ack(self, event_id: str) -> None:
        return None

    async def close(self) -> None:
        """Close the in-process platform, if one was made."""
        if self._platform is not None:
            await self._platform.close()
            self._platform = None
            self._conversations.clear()


class Agent:
    """A buddy's turns in-process: persona, tools, hooks and model, no platform.

    The companion layer (``memory:``, ``character:``, ``lore:``) runs as in a served
    buddy, by the in-process platform's clock: each turn's message is extracted, the
    turn waits for it within ``memory.wait_ms``, and the prompt gets the live card,
    state and lore.

    Args:
        blueprint: From :func:`buddy.load`.
        model: The model to use (default: the one the blueprint names).
        keep_history: Whether turns see the earlier ones (one conversation), or each
            turn is a fresh conversation.
        layer_model: The conversation layers' model (automatic memory's extractor).
        commit: Store every turn on the in-process platform as a served buddy's is: the
            user's message (or the event) goes through the platform, which delivers it
            as an event, and the turn is committed against it — the transcript, the turn
            records with the one-turn data rule's redaction, a proactive reply's gates.
            Off by default: a turn then touches the platform only when a tool or a layer
            calls it (the framework's own cost per turn stays what it is without one).
    """

    _ids = itertools.count(1)

    def __init__(
        self,
        blueprint: Blueprint,
        model: Model | None = None,
        *,
        keep_history: bool = True,
        layer_model: Model | None = None,
        commit: bool = False,
    ) -> None:
        if model is None:
            from buddy.models.registry import resolve

            model = resolve(blueprint.model)
        self.blueprint = blueprint
        self.client = DetachedClient(blueprint)
        self.loop = AgentLoop(model, build_tools(blueprint), HookRunner(blueprint))
        self.layers = conversation_layers(blueprint, self.client, model, layer_model)
        self.turns = TurnRunner(blueprint, self.loop, self.layers)
        self.commit = commit
        self.summary = ""  # of the turns compacted away, as a served buddy's
        self._records: list[dict[str, Any]] = []
        self._events = itertools.count(1)
        prepare(blueprint)  # what its conversations share (resources), read once
        self.keep_history = keep_history
        self.history: list[Message] = []
        self.conversation = self._conversation()

    def _conversation(self) -> RuntimeConversation:
        cid = f"local-{next(self._ids)}"
        return RuntimeConversation(
            self.client,
            cid,
            "private",
            blueprint=self.blueprint,
        )

    def run(
        self, text: str, *, on_event: Callable[[AgentEvent], None] | None = None
    ) -> Coroutine[Any, Any, TurnOutcome]:
        """One turn: the user says ``text``; ``await`` it for the outcome (``.reply``,
        ``.steps`` …)."""
        # A plain def handing back the turn's coroutine: one frame less on every turn.
        return self._turn("message", {"text": text}, on_event)

    async def event(
        self,
        type: str,
        payload: Mapping[str, Any] | None = None,
        *,
        on_event: Callable[[AgentEvent], None] | None = None,
    ) -> TurnOutcome:
        """One turn started by a platform event: a user's ``message`` (``{"text": …}``),
        or a type a capability turns into a turn (``proactive``, ``consent_result`` …),
        run exactly as a served buddy runs it — the kind's words for the model, its
        system-prompt part, and for a turn nobody asked for, a skip marker, a failure or
        the step limit that says nothing (the turn is committed with no reply; the
        outcome is the loop's, ``outcome.reply`` the marker it answered).

        Raises:
            ValueError: No registered capability turns events of ``type`` into turns.
        """
        if not self.turns.handles(type):
            raise ValueError(
                f"no capability turns {type!r} events into turns"
                f" (these do: {', '.join(['message', *self.turns.kinds])})"
            )
        return await self._turn(type, dict(payload or {}), on_event)

    async def _turn(
        self, type_: str, payload: dict[str, Any], on_event: Callable[[AgentEvent], None] | None
    ) -> TurnOutcome:
        conversation = self.conversation if self.keep_history else self._conversation()
        commit: Commit | None = None
        event: Event | LocalEvent
        if self.commit:
            event, commit = await self._stored_event(conversation, type_, payload)
        else:  # a local event, committed nowhere
            local = f"{conversation.id}-{next(self._events)}"
            if self.layers:  # by the platform's clock, with its revisions as delivered
                platform = await self.client.platform()
                pid = await self.client.platform_id(conversation.id)
                revisions = await platform.revisions(pid)
                event = LocalEvent(
                    local, type_, conversation.id, payload, platform.now(), revisions
                )
            else:
                event = LocalEvent(local, type_, conversation.id, payload, time.time())
        history = self.history if self.keep_history else []
        turn = await self.turns.run(
            conversation, event, history, commit, summary=self.summary, emit=on_event
        )
        if self.keep_history and turn.committed.get("status") != "skipped":
            # A reply the platform's gates stopped at commit time was never seen.
            self.history.extend(turn.outcome.messages)
            self._keep(event, turn.record)
        return turn.outcome

    def _keep(self, event: Event | LocalEvent, record: dict[str, Any]) -> None:
        """Keep the turn as the platform keeps a served one's, and compact the history as
        the server does: past ``COMPACT_AFTER_TURNS`` turns, the older ones go into
        :attr:`summary` and the model sees it and the last ``KEEP_RECENT_TURNS``."""
        kept = {
            **record,
            "event_type": event.type,
            "user_text": event.payload.get("text", ""),
            "created_at": event.created_at,
        }
        self._records.append(kept)
        if len(self._records) < history.COMPACT_AFTER_TURNS:
            return
        older = self._records[: -history.KEEP_RECENT_TURNS]
        self._records = self._records[-history.KEEP_RECENT_TURNS :]
        self.summary = summarised(self.summary, older, group=False, kinds=self.turns.kinds)
        self.history[:] = records_to_messages(self._records, group=False)

    async def _stored_event(
        self, conversation: RuntimeConversation, type_: str, payload: dict[str, Any]
    ) -> tuple[Event, Commit]:
        """A turn's event made on the in-process platform (the user's message goes
        through it, or the event is stored as the platform's parts store theirs), and the
        commit that stores the turn against it and acknowledges it."""
        from buddy.platform.protocol.events import Event

        platform = await self.client.platform()
        pid = await self.client.platform_id(conversation.id)
        if type_ == "message":
            sent = await platform.dev(
                "POST", f"/conversations/{pid}/messages", {"text": str(payload.get("text", ""))}
            )
            event_id = str(sent["event_id"])
        else:
            event_id = await platform.emit(type_, pid, payload)
        stored = await platform.event(event_id)
        event = Event.model_validate({**stored, "conversation_id": conversation.id})

        async def commit(cid: str, turn: dict[str, Any]) -> Mapping[str, Any]:
            committed = await self.client.commit_turn(cid, turn)
            await platform.ack(event_id)
            return dict(committed or {})

        return event, commit

    async def settled(self) -> None:
        """Wait until the conversation layers' background work is done (automatic
        memory's extractions and writes)."""
        for layer in self.layers:
            await layer.settled()

    async def close(self) -> None:
        """Stop the layers' work and close the in-process platform (its database is gone)."""
        for layer in self.layers:
            await layer.close()
        await self.client.close()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
