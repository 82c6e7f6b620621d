"""Conversations, turns and history — and the dev endpoints that act as users.

The buddy commits each turn's output (``POST /internal/v1/conversation/turns``), once per
event: a retried commit answers ``duplicate`` and shows the user nothing new. A reply to
an event a capability gates (``Platform.gates``: a proactive run's quiet hours and limits)
passes those gates again at commit time. What the
runtime persists of a turn (steps, redactions) is stored as given and read back by
``GET /internal/v1/conversation/turns`` — the record later tests inspect.

Made of :mod:`~buddy.platform.dev.conversations_api` (the ``/internal/v1`` routes),
:mod:`~buddy.platform.dev.conversations_dev` (the ``/dev`` routes) and
:mod:`~buddy.platform.dev.conversations_store` (the queries they share); this module is
the core part :mod:`buddy.platform.dev.parts` loads: its tables and OpenAPI notes.
"""

from __future__ import annotations

from buddy.platform.dev.conversations_api import router
from buddy.platform.dev.conversations_dev import dev_router
from buddy.platform.dev.conversations_store import event_acks, read_turns

__all__ = ["LINKS", "STATUSES", "TABLES", "dev_router", "event_acks", "read_turns", "router"]

TABLES = """
CREATE TABLE IF NOT EXISTS turns (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    event_id TEXT NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL,
    message_ids TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (conversation_id, event_id)
);
CREATE TABLE IF NOT EXISTS summaries (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    text TEXT NOT NULL,
    covers_until REAL NOT NULL,
    updated_at REAL NOT NULL
);
"""


#: Statuses beyond the common ones (``buddy.platform.dev.parts``).
STATUSES: dict[tuple[str, str], dict[str, str]] = {
    ("post", "/dev/buddies"): {"409": "The buddy is registered already (`buddy_exists`)"},
    ("post", "/dev/conversations"): {"404": "No such buddy (`buddy_not_found`)"},
}
#: Links from the operations that make a buddy or a conversation to those that use it.
LINKS: dict[tuple[str, str, str], dict[str, tuple[str, str, dict[str, str]]]] = {
    ("post", "/dev/buddies", "201"): {
        "RotateTokens": (
            "post",
            "/dev/buddies/{buddy_id}/tokens",
            {"buddy_id": "$response.body#/buddy_id"},
        )
    },
    ("post", "/dev/conversations", "201"): {
        name: (verb, path, {"conversation_id": "$response.body#/id"})
        for name, verb, path in (
            ("DeleteConversation", "delete", "/dev/conversations/{conversation_id}"),
            ("SendMessage", "post", "/dev/conversations/{conversation_id}/messages"),
            ("ReadTranscript", "get", "/dev/conversations/{conversation_id}/messages"),
            ("ReadTurns", "get", "/dev/conversations/{conversation_id}/turns"),
        )
    },
}
