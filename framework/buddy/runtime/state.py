"""Per-turn state and the conversation object the runtime hands to tools and hooks.

The guarantee "data is visible for one turn only" starts here: reading user data marks
the turn, and from then on every write that could carry its values to the platform —
memory, question cards, widget contents, subscriptions — is refused with a message the
model sees (through tools and through the conversation object alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from buddy.compile.blueprint import SubscriptionSpec
from buddy.errors import ToolError
from buddy.platform.api import PlatformClient
from buddy.platform.conversation import (
    Conversation,
    DataAccess,
    Kind,
    Memory,
    Proactive,
    Resources,
    Widgets,
)

__all__ = ["DATA_READ_REFUSAL", "RuntimeConversation", "TurnState", "subscription_request"]

DATA_READ_REFUSAL = (
    "这一轮已经读过用户授权的数据：为了让用户撤销授权时能真正收回，"
    "本轮不能再{what}。想让结论以后还在，就在回复里直接说出来。"
)


@dataclass
class TurnState:
    """What happened so far in the current turn.

    Attributes:
        proactive: Whether this is a proactive turn.
        data_read: Whether user data has been read (and so the model has seen it).
        question: The question card sent by ``ask_question`` (ends the turn).
        ended: Whether a tool ended the turn (question or consent card).
    """

    proactive: bool = False
    data_read: bool = False
    question: dict[str, Any] | None = None
    ended: bool = False


def _available(results: Any) -> bool:
    items = results if isinstance(results, list) else [results]
    return any(isinstance(r, dict) and r.get("status") == "available" for r in items)


class _GuardedMemory(Memory):
    turn: TurnState

    async def write(self, key: str, text: str) -> None:
        if self.turn.data_read:
            raise ToolError(DATA_READ_REFUSAL.format(what="写记忆"))
        await super().write(key, text)


class _GuardedWidgets(Widgets):
    """Widget writes carry content: after a data read they could store its values."""

    turn: TurnState

    def _check(self) -> None:
        if self.turn.data_read:
            raise ToolError(DATA_READ_REFUSAL.format(what="建或改小挂件"))

    async def create(
        self, type: str, title: str, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        self._check()
        return await super().create(type, title, idempotency_key=idempotency_key)

    async def rename(self, widget_id: str, title: str) -> None:
        self._check()
        await super().rename(widget_id, title)

    async def write_record(
        self,
        widget_id: str,
        module: str,
        record_id: str,
        data: Mapping[str, Any],
        *,
        expected_revision: int | None = None,
    ) -> dict[str, Any]:
        self._check()
        return await super().write_record(
            widget_id, module, record_id, data, expected_revision=expected_revision
        )

    async def set_presentation(
        self, widget_id: str, *, summary: str | None = None, image_media_id: str | None = None
    ) -> None:
        self._check()
        await super().set_presentation(widget_id, summary=summary, image_media_id=image_media_id)


class _TrackedDataAccess(DataAccess):
    turn: TurnState

    async def query(
        self, datasets: list[str], member_id: str | None = None
    ) -> list[dict[str, Any]]:
        results = await super().query(datasets, member_id)
        if _available(results):
            self.turn.data_read = True
        return results

    async def read_result(self, request_id: str) -> dict[str, Any]:
        result = await super().read_result(request_id)
        if _available(result):
            self.turn.data_read = True
        return result


def subscription_request(spec: SubscriptionSpec) -> dict[str, Any]:
    """The platform request for a declared subscription."""
    trigger: Any = spec.trigger.type
    if spec.trigger.type == "data.updated":
        trigger = {"type": "data.updated", "dataset": spec.trigger.dataset}
    elif spec.trigger.type == "schedule":
        assert spec.trigger.at is not None
        trigger = {"type": "schedule", "at": spec.trigger.at.isoformat()}
        if spec.trigger.interval_minutes is not None:
            trigger["interval_minutes"] = spec.trigger.interval_minutes
    return {
        "title": spec.title,
        "reason": spec.reason,
        "trigger": trigger,
        "quiet_hours": {
            "start": spec.quiet_hours.start,
            "end": spec.quiet_hours.end,
            "timezone": spec.quiet_hours.timezone,
        },
        "cooldown_minutes": spec.cooldown_minutes,
        "daily_limit": spec.daily_limit,
    }


class _DeclaredProactive(Proactive):
    turn: TurnState
    declared: Mapping[str, SubscriptionSpec]

    def is_running(self) -> bool:
        return self.turn.proactive

    async def subscribe(self, key: str, request: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Create or update ``key``; a key the manifest declares takes its fields as defaults."""
        if self.turn.data_read:
            raise ToolError(DATA_READ_REFUSAL.format(what="订阅主动服务"))
        spec = self.declared.get(key)
        merged = {**(subscription_request(spec) if spec else {}), **(request or {})}
        return await super().subscribe(key, merged)


class RuntimeConversation(Conversation):
    """The ``conversation`` tool bodies and hooks receive, with the turn's guards.

    Attributes:
        turn: The current turn's state (replaced at the start of every turn).
        members: Member id → name (groups).
    """

    def __init__(
        self,
        client: PlatformClient,
        conversation_id: str,
        kind: Kind,
        resources: Resources,
        *,
        declared: Mapping[str, SubscriptionSpec] | None = None,
        members: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(client, conversation_id, kind, resources)
        self.members: dict[str, str] = dict(members or {})
        memory = _GuardedMemory(client, conversation_id)
        data = _TrackedDataAccess(client, conversation_id)
        widgets = _GuardedWidgets(client, conversation_id)
        proactive = _DeclaredProactive(client, conversation_id)
        proactive.declared = dict(declared or {})
        self.memory = memory
        self.data_access = data
        self.widget = widgets
        self.proactive = proactive
        self._guarded = (memory, data, widgets, proactive)
        self.turn = TurnState()

    @property
    def turn(self) -> TurnState:
        """The current turn's state."""
        return self._turn

    @turn.setter
    def turn(self, state: TurnState) -> None:
        self._turn = state
        for part in self._guarded:
            part.turn = state
