"""Wire shapes of the memory capability (``/internal/v1/memory``).

A conversation's memory is a set of ``key → text`` entries the buddy writes for itself.
Limits (:mod:`buddy.capabilities.memory.limits`): a key is 1–64 characters without whitespace or ``/``;
a text is at most 16384 UTF-8 bytes; at most 64 entries and 262144 bytes of text in total
per conversation.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field

from buddy.capabilities.memory.limits import MEMORY_TEXT_BYTES, memory_text_refusal
from buddy.platform.protocol.conversation import Wire, refused
from buddy.platform.protocol.values import valid_unicode

__all__ = ["MemoryEntry", "MemoryList", "MemoryWrite", "UnicodeText", "valid_unicode"]


UnicodeText = Annotated[str, AfterValidator(valid_unicode)]


def _memory_text(text: str) -> str:
    refusal = memory_text_refusal(text)
    if refusal is not None:
        raise refused(refusal)
    return text


class MemoryWrite(Wire):
    """``PUT /internal/v1/memory/{key}``: the entry's new text (overwrites)."""

    text: Annotated[UnicodeText, AfterValidator(_memory_text)] = Field(
        description=f"At most {MEMORY_TEXT_BYTES} bytes in UTF-8 (bytes, not characters:"
        " `400 memory_text_too_long`).",
        json_schema_extra={"maxLength": MEMORY_TEXT_BYTES},
    )


class MemoryEntry(BaseModel):
    """One memory entry."""

    key: str
    text: str
    updated_at: float = Field(description="Platform time of the last write, epoch seconds.")


class MemoryList(BaseModel):
    """``GET /internal/v1/memory``: every entry, sorted by key."""

    entries: list[MemoryEntry]
