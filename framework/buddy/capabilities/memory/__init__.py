"""Memory: what a buddy keeps about a conversation (key → text), written by declarative
``uses: memory.*`` tools and by code through ``conversation.memory``. It offers no
platform tool of its own; its limits and rules are in :mod:`buddy.capabilities.memory.limits`."""

from __future__ import annotations

from buddy.capabilities import Capability

CAPABILITY = Capability(
    "memory",
    "记忆（conversation.memory 与 uses: memory.*）",
    platform="buddy.capabilities.memory.platform",
    attribute="memory",
    facade="buddy.capabilities.memory.conversation:Memory",
)
