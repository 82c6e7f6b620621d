"""Wire shapes of the memory capability (``/internal/v1/memory``).

A conversation's memory is a set of ``key → text`` entries the buddy writes for itself.
Limits (:mod:`buddy.capabilities.memory.limits`): a key is 1–64 characters without whitespace or ``/``;
a text is at most 16384 UTF-8 bytes; at most 64 entries and 262144 bytes of text in total
per conversation.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field

from buddy.capabilities.memory.limits import MEMORY_TEXT_BYTES
from buddy.platform.protocol.conversation import Wire
from buddy.platform.protocol.values import valid_unicode

__all__ = ["MemoryEntry", "MemoryList", "MemoryWrite", "UnicodeText", "valid_unicode"]


UnicodeText = Annotated[str, AfterValidator(valid_unicode)]


class MemoryWrite(Wire):
    """``PUT /internal/v1/memory/{key}``: the entry's new text (overwrites)."""

    text: UnicodeText = Field(
        description=f"At most {MEMORY_TEXT_BYTES} bytes in UTF-8 (bytes, not characters)."
    )


class MemoryEntry(BaseModel):
    """One memory entry."""

    key: str
    text: str
    updated_at: float = Field(description="Platform time of the last write, epoch seconds.")


class MemoryList(BaseModel):
    """``GET /internal/v1/memory``: every entry, sorted by key."""

    entries: list[MemoryEntry]
