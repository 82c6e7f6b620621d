"""Gateway messages: events the platform sends a buddy process, and what the buddy answers.

Every event has an id; delivery is at-least-once (unacknowledged events are sent again
after a reconnect, in order), so a buddy processes each event id once.

Event types are open: besides ``message`` (the core's own), a type is a capability's
(its ``EventKind``), and the platform may send one no capability of this buddy knows —
the runtime acknowledges such an event and skips it (docs/protocol.md, the gateway).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

__all__ = [
    "EVENT_TYPE_PATTERN",
    "SUPERSEDED_CLOSE_CODE",
    "Ack",
    "Event",
    "Hello",
    "Superseded",
]

#: What an event type is: a lowercase name of letters, digits and ``_``, a letter first.
EVENT_TYPE_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
# The websocket close code sent to a connection replaced by a newer one of the same identity.
SUPERSEDED_CLOSE_CODE = 4001


def _revisions(value: Any) -> dict[str, int]:
    # Advisory: a revision the buddy cannot read is one it does not have (it then reads
    # that part's state back), never a reason to drop the event.
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}


class Event(BaseModel):
    """``{"type": "event", "event": {...}}`` — server → buddy.

    Attributes:
        id: Unique; acknowledge it once processed.
        type: ``message`` (a user wrote), or a capability's type (its ``EventKind``),
            matching :data:`EVENT_TYPE_PATTERN`. Open: a type no registered capability
            handles is acknowledged and skipped by the runtime.
        conversation_id: The conversation it belongs to.
        payload: Type-specific fields (see docs/protocol.md).
        created_at: Platform time, seconds since the epoch.
        revisions: The conversation's state revisions as the event was delivered, by
            part (``memory``); optional — a platform may send none.
    """

    id: str
    type: str = Field(pattern=EVENT_TYPE_PATTERN)
    conversation_id: str | None
    payload: dict[str, Any]
    created_at: float
    revisions: Annotated[dict[str, int], BeforeValidator(_revisions)] = Field(default_factory=dict)


class Hello(BaseModel):
    """``{"type": "hello", ...}`` — server → buddy, first message after connecting."""

    type: Literal["hello"] = "hello"
    identity: str
    session: str


class Superseded(BaseModel):
    """``{"type": "supersede", ...}`` — server → buddy, then the connection is closed."""

    type: Literal["supersede"] = "supersede"
    reason: str


class Ack(BaseModel):
    """``{"type": "ack", "event_id": ...}`` — buddy → server, after processing an event."""

    type: Literal["ack"] = "ack"
    event_id: str
