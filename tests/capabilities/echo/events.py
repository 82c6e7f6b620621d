"""The echo capability's event type, ``echo_ping``: the platform knocks with a text, and the
model reads it as the turn's user message."""

from __future__ import annotations

from typing import Any


def user_message(payload: dict[str, Any]) -> str:
    """What the model reads for an ``echo_ping`` event."""
    return f"[回声敲门] {payload.get('text')}"
