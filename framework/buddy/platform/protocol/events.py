"""Gateway messages: events the platform sends a buddy process, and what the buddy answers.

Every event has an id; delivery is at-least-once (unacknowledged events are sent again
after a reconnect, in order), so a buddy processes each event id once.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

__all__ = ["EVENT_TYPES", "SUPERSEDED_CLOSE_CODE", "Ack", "Event", "Hello", "Superseded"]

EVENT_TYPES = ("message", "proactive", "consent_result")
# The websocket close code sent to a connection replaced by a newer one of the same identity.
SUPERSEDED_CLOSE_CODE = 4001


class Event(BaseModel):
    """``{"type": "event", "event": {...}}`` — server → buddy.

    Attributes:
        id: Unique; acknowledge it once processed.
        type: ``message`` (a user wrote), ``proactive`` (a subscription fired), or
            ``consent_result`` (the user answered a data-access card).
        conversation_id: The conversation it belongs to.
        payload: Type-specific fields (see docs/protocol.md).
        created_at: Platform time, seconds since the epoch.
    """

    id: str
    type: Literal["message", "proactive", "consent_result"]
    conversation_id: str | None
    payload: dict[str, Any]
    created_at: float


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
