"""The conversation object the runtime hands to tools and hooks, with the turn's state.

Each capability's facade (``buddy/capabilities/<name>/conversation.py``) holds its part
of the one-turn data-visibility rule: reading user data marks the turn, after which
memory writes and question cards are refused, as the platform contract says, and widget
writes and subscriptions too with ``data: {after_read: strict}``; a consent card ends
the turn, whoever sends it. This module shares one :class:`TurnState` between them per
turn, and makes logs follow the records' redaction.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from buddy.compile.blueprint import Blueprint
from buddy.extend.turn import DATA_READ_REFUSAL, Bound, TurnState
from buddy.platform.api import PlatformClient
from buddy.platform.conversation import Conversation, Kind

__all__ = [
    "CURRENT_TURN",
    "DATA_READ_REFUSAL",
    "RuntimeConversation",
    "TurnState",
    "install_log_redaction",
]

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


class RuntimeConversation(Conversation):
    """The ``conversation`` tool bodies and hooks receive, with the turn's guards.

    Args:
        blueprint: The buddy: its compiled parts (``blueprint.facades``), each configured
            with what the manifest says of its capability (``after_read: strict``, the
            declared subscriptions). Without one, every registered part, unconfigured.
        members: Member id → name (groups).

    Attributes:
        turn: The current turn's state (replaced at the start of every turn).
        members: Member id → name (groups).
    """

    def __init__(
        self,
        client: PlatformClient,
        conversation_id: str,
        kind: Kind,
        *,
        blueprint: Blueprint | None = None,
        members: Mapping[str, str] | None = None,
    ) -> None:
        self._blueprint = blueprint
        self._turn = TurnState()
        facades = blueprint.facades if blueprint is not None else None
        super().__init__(client, conversation_id, kind, facades=facades)
        self.members: dict[str, str] = dict(members or {})

    def _made(self, cls: type[Bound]) -> Bound:
        """A part, configured with the blueprint and bound to the current turn."""
        part = cls(self.client, self.id)
        if self._blueprint is not None:
            part.configure(self._blueprint)
        part.turn = self._turn
        return part

    @property
    def turn(self) -> TurnState:
        """The current turn's state."""
        return self._turn

    @turn.setter
    def turn(self, state: TurnState) -> None:
        self._turn = state
        for part in self.parts.made():
            part.turn = state
