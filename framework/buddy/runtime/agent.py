"""Run turns of a buddy in-process, without a platform: ``Agent(blueprint).run(text)``.

For scripts, notebooks, benchmarks and unit tests of tools. Memory lives in the process;
the other platform capabilities (widgets, user data, proactive) need a platform and answer
a clear ``PlatformError`` here — run the buddy with ``buddy chat`` or ``buddy run`` for them.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from buddy.compile.blueprint import Blueprint
from buddy.errors import PlatformError
from buddy.models.base import Message, Model
from buddy.platform.api import PlatformClient
from buddy.platform.conversation import Resources
from buddy.platform.limits import (
    Refusal,
    memory_capacity_refusal,
    memory_key_refusal,
    memory_text_refusal,
)
from buddy.runtime.hooks import HookRunner
from buddy.runtime.loop import AgentEvent, AgentLoop, TurnOutcome
from buddy.runtime.state import RuntimeConversation, TurnState
from buddy.runtime.tools import build_tools

if TYPE_CHECKING:
    from buddy.platform.protocol.events import Event

__all__ = ["Agent", "DetachedClient"]

_NEEDS_PLATFORM = "needs a platform: run the buddy with `buddy chat` or `buddy run`"


def _refuse(refusal: Refusal | None) -> None:
    if refusal is not None:
        raise PlatformError(refusal.status, refusal.reason)


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


class DetachedClient(PlatformClient):
    """A platform stand-in for running without one: memory in the process, nothing else.

    Memory keeps the platform's rules (:mod:`buddy.platform.limits`, the same functions
    the dev platform enforces): a write or delete the platform would refuse raises the
    ``PlatformError`` :class:`~buddy.platform.client.HttpPlatformClient` raises for the
    platform's answer — same status, same reason — so a test written with ``Agent``
    fails where production would.
    """

    def __init__(self) -> None:
        self.memory: dict[str, dict[str, dict[str, Any]]] = {}

    def _missing(self, what: str) -> PlatformError:
        return PlatformError(501, f"{what} {_NEEDS_PLATFORM}")

    async def upload_declaration(self, requirements: Sequence[Mapping[str, Any]]) -> Any:
        return {"requirements": list(requirements)}

    async def upload_widget_types(self, types: Sequence[Mapping[str, Any]]) -> Any:
        return {"types": [t["type"] for t in types]}

    async def events(self) -> AsyncIterator[Event]:  # pragma: no cover - nothing to receive
        raise self._missing("receiving events")
        yield

    async def ack(self, event_id: str) -> None:
        return None

    async def close(self) -> None:
        return None

    async def conversation_info(self, cid: str) -> Any:
        return {"id": cid, "kind": "private", "members": []}

    async def commit_turn(self, cid: str, turn: Mapping[str, Any]) -> Any:
        return {"status": "committed", "reason": "", "message_ids": []}

    async def turns(self, cid: str, after: float = 0) -> Any:
        return []

    async def put_summary(self, cid: str, text: str, covers_until: float) -> Any:
        return {"text": text, "covers_until": covers_until}

    async def get_summary(self, cid: str) -> Any:
        return None

    async def memory_list(self, cid: str) -> Any:
        return [dict(v) for _, v in sorted(self.memory.get(cid, {}).items())]

    async def memory_write(self, cid: str, key: str, text: str) -> Any:
        entries = self.memory.setdefault(cid, {})
        _refuse(memory_key_refusal(key) or memory_text_refusal(text))
        old = entries.get(key)
        _refuse(
            memory_capacity_refusal(
                len(entries),
                sum(_bytes(e["text"]) for e in entries.values()),
                _bytes(old["text"]) if old is not None else None,
                _bytes(text),
            )
        )
        entry = {"key": key, "text": text, "updated_at": 0.0}
        entries[key] = entry
        return dict(entry)

    async def memory_delete(self, cid: str, key: str) -> None:
        _refuse(memory_key_refusal(key))
        self.memory.get(cid, {}).pop(key, None)

    async def data_query(self, cid: str, datasets: list[str], member_id: str | None) -> Any:
        raise self._missing("user data")

    async def data_request(self, cid: str, request: Mapping[str, Any]) -> Any:
        raise self._missing("user data")

    async def data_read_result(self, cid: str, request_id: str) -> Any:
        raise self._missing("user data")

    async def widget_call(
        self, cid: str, method: str, path: str, body: Mapping[str, Any] | None = None
    ) -> Any:
        raise self._missing("widgets")

    async def proactive_subscribe(self, cid: str, key: str, request: Mapping[str, Any]) -> Any:
        raise self._missing("proactive subscriptions")

    async def proactive_list(self, cid: str) -> Any:
        return []

    async def proactive_unsubscribe(self, cid: str, key: str) -> bool:
        return False

    async def proactive_unsubscribe_all(self, cid: str) -> int:
        return 0


class Agent:
    """A buddy's turns in-process: persona, tools, hooks and model, no platform.

    Args:
        blueprint: From :func:`buddy.load`.
        model: The model to use (default: the one the blueprint names).
        keep_history: Whether turns see the earlier ones (one conversation), or each
            turn is a fresh conversation.
    """

    _ids = itertools.count(1)

    def __init__(
        self, blueprint: Blueprint, model: Model | None = None, *, keep_history: bool = True
    ) -> None:
        if model is None:
            from buddy.models.registry import resolve

            model = resolve(blueprint.model)
        self.blueprint = blueprint
        self.client = DetachedClient()
        self.loop = AgentLoop(model, build_tools(blueprint), HookRunner(blueprint))
        self.resources = Resources.load(blueprint.resources)
        self._declared = {s.key: s for s in blueprint.proactive.subscriptions}
        self._strict = blueprint.data.after_read == "strict"
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
            declared=self._declared,
            strict_after_read=self._strict,
        )

    async def run(
        self, text: str, *, on_event: Callable[[AgentEvent], None] | None = None
    ) -> TurnOutcome:
        """One turn: the user says ``text``; returns the outcome (``.reply``, ``.steps`` …)."""
        conversation = self.conversation if self.keep_history else self._conversation()
        conversation.turn = TurnState()
        system = self.blueprint.persona.render(kind="private", conversation_id=conversation.id)
        history = self.history if self.keep_history else []
        outcome = await self.loop.run(
            system, history, Message("user", text), conversation, on_event
        )
        if self.keep_history:
            self.history.extend(outcome.messages)
        return outcome
