"""Per-turn state and the conversation object the runtime hands to tools and hooks.

The guarantee "data is visible for one turn only" starts here: reading user data marks
the turn, and from then on memory writes and question cards are refused with a message
the model sees (through tools and through the conversation object alike), as the
platform contract says. Widget writes and proactive subscriptions run (the loop redacts
their arguments and results in the record) unless the manifest asks for
``data: {after_read: strict}``, which refuses them too.

A consent card ends the turn whoever sends it: the ``data_access_request`` tool or a
custom tool's ``conversation.data_access.request(...)``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

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

__all__ = [
    "CURRENT_TURN",
    "DATA_READ_REFUSAL",
    "RuntimeConversation",
    "TurnState",
    "install_log_redaction",
    "subscription_request",
]

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


#: The turn being run in this task (set by the agent loop), for the log redaction below.
CURRENT_TURN: ContextVar[TurnState | None] = ContextVar("buddy_turn", default=None)
#: What a redacted part of a log line reads.
LOG_REDACTED = "[redacted: the turn read user data]"
#: The loggers whose lines can carry what a turn produced: httpx logs every request's URL
#: (memory keys, subscription keys and record ids are path segments), the loop and the
#: hooks log the exceptions of tool bodies and hooks.
_REDACTED_LOGGERS = ("httpx", "buddy.runtime.loop", "buddy.runtime.hooks")


class _AfterReadFilter(logging.Filter):
    """Logs follow the records' redaction: after a turn read user data, a request URL
    keeps only its route (``/internal/v1/memory``), an exception only its type."""

    def filter(self, record: logging.LogRecord) -> bool:
        turn = CURRENT_TURN.get()
        if turn is None or not turn.data_read:
            return True
        if record.name == "httpx" and isinstance(record.args, tuple):
            record.args = tuple(_route_only(arg) for arg in record.args)
        if record.exc_info:
            kind = record.exc_info[0].__name__ if record.exc_info[0] else "error"
            record.msg = f"{record.msg} ({kind}; {LOG_REDACTED})"
            record.exc_info = None
            record.exc_text = None
        return True


def _route_only(value: Any) -> Any:
    """A platform URL cut after its route (``…/internal/v1/memory/[redacted]``)."""
    text = str(value)
    if "://" not in text or "/internal/" not in text:
        return value
    parts = urlsplit(text)
    segments = parts.path.split("/")
    keep = segments.index("internal") + 3 if "internal" in segments else len(segments)
    path = "/".join(segments[:keep] + ([LOG_REDACTED] if len(segments) > keep else []))
    return f"{parts.scheme}://{parts.netloc}{path}"


_FILTER = _AfterReadFilter()


def install_log_redaction() -> None:
    """Attach the after-read redaction to the loggers that need it (once)."""
    for name in _REDACTED_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


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
    """Widget writes carry content: after a data read they could store its values, so a
    strict manifest refuses them."""

    turn: TurnState
    strict: bool = False

    def _check(self) -> None:
        if self.strict and self.turn.data_read:
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

    async def request(
        self,
        kind: Literal["healthkit", "location", "calendar"],
        reason: str,
        *,
        idempotency_key: str,
        datasets: list[str] | None = None,
        calendar_days: int | None = None,
    ) -> dict[str, Any]:
        """Send a consent card; the turn ends after the tool step that sent it."""
        sent = await super().request(
            kind,
            reason,
            idempotency_key=idempotency_key,
            datasets=datasets,
            calendar_days=calendar_days,
        )
        self.turn.ended = True
        return sent

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
    strict: bool = False

    def is_running(self) -> bool:
        return self.turn.proactive

    async def subscribe(self, key: str, request: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Create or update ``key``; a key the manifest declares takes its fields as defaults."""
        if self.strict and self.turn.data_read:
            raise ToolError(DATA_READ_REFUSAL.format(what="订阅主动服务"))
        spec = self.declared.get(key)
        merged = {**(subscription_request(spec) if spec else {}), **(request or {})}
        return await super().subscribe(key, merged)


class RuntimeConversation(Conversation):
    """The ``conversation`` tool bodies and hooks receive, with the turn's guards.

    Args:
        strict_after_read: Refuse widget writes and proactive subscriptions after a data
            read too (the manifest's ``data: {after_read: strict}``).

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
        strict_after_read: bool = False,
    ) -> None:
        super().__init__(client, conversation_id, kind, resources)
        self.members: dict[str, str] = dict(members or {})
        memory = _GuardedMemory(client, conversation_id)
        data = _TrackedDataAccess(client, conversation_id)
        widgets = _GuardedWidgets(client, conversation_id)
        widgets.strict = strict_after_read
        proactive = _DeclaredProactive(client, conversation_id)
        proactive.declared = dict(declared or {})
        proactive.strict = strict_after_read
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
