"""Run turns of a buddy in-process: ``Agent(blueprint).run(text)``.

For scripts, notebooks, benchmarks and unit tests of tools. Every platform capability
works, on the dev platform run inside this process (:class:`DetachedClient`, made on the
first platform call): memory, widgets, user data, proactive subscriptions — with the
platform's own code, limits and refusals.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from buddy.capabilities import conversation_layers, persona_layer
from buddy.capabilities.turn import Layered
from buddy.compile.blueprint import Blueprint
from buddy.errors import PlatformError
from buddy.models.base import Message, Model
from buddy.platform.api import Json, PlatformClient
from buddy.platform.conversation import Resources
from buddy.runtime.hooks import HookRunner
from buddy.runtime.loop import AgentEvent, AgentLoop, TurnOutcome
from buddy.runtime.state import RuntimeConversation, TurnState
from buddy.runtime.tools import build_tools

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
    """

    _ids = itertools.count(1)

    def __init__(
        self,
        blueprint: Blueprint,
        model: Model | None = None,
        *,
        keep_history: bool = True,
        layer_model: Model | None = None,
    ) -> None:
        if model is None:
            from buddy.models.registry import resolve

            model = resolve(blueprint.model)
        self.blueprint = blueprint
        self.client = DetachedClient(blueprint)
        self.loop = AgentLoop(model, build_tools(blueprint), HookRunner(blueprint))
        self.layers = conversation_layers(blueprint, self.client, model, layer_model)
        self._events = itertools.count(1)
        self.resources = Resources.load(blueprint.resources)
        self.keep_history = keep_history
        self.history: list[Message] = []
        self.conversation = self._conversation()

    def _conversation(self) -> RuntimeConversation:
        cid = f"local-{next(self._ids)}"
        return RuntimeConversation(
            self.client,
            cid,
            "private",
            self.resources,
            blueprint=self.blueprint,
        )

    async def run(
        self, text: str, *, on_event: Callable[[AgentEvent], None] | None = None
    ) -> TurnOutcome:
        """One turn: the user says ``text``; returns the outcome (``.reply``, ``.steps`` …)."""
        conversation = self.conversation if self.keep_history else self._conversation()
        conversation.turn = TurnState()
        context = persona_layer(self.blueprint, example=False)
        layered: list[Layered] = []
        event = None
        if self.layers:
            from buddy.platform.protocol.events import Event

            platform = await self.client.platform()
            now = platform.now()
            event = Event(
                id=f"{conversation.id}-{next(self._events)}",
                type="message",
                conversation_id=conversation.id,
                payload={"text": text},
                created_at=now,
            )
            layered = [await layer.before(conversation, event) for layer in self.layers]
            for part in layered:
                context.update(part.context)
        system = self.blueprint.persona.render(
            kind="private", conversation_id=conversation.id, layer=context
        )
        system += "".join(f"\n\n{part.prompt}" for part in layered if part.prompt)
        history = self.history if self.keep_history else []
        outcome = await self.loop.run(
            system, history, Message("user", text), conversation, on_event
        )
        if event is not None:
            turn = {"question": conversation.turn.question, "data_read": outcome.data_read}
            for layer in self.layers:
                await layer.after(conversation, event, turn)
        if self.keep_history:
            self.history.extend(outcome.messages)
        return outcome

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
