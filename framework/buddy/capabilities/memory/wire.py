"""Wire shapes of the memory capability (``/internal/v1/memory``).

A conversation's memory is a set of ``key → text`` entries the buddy writes for itself.
Limits (:mod:`buddy.capabilities.memory.limits`): a key is 1–64 characters without whitespace or ``/``;
a text is at most 16384 UTF-8 bytes; at most 64 entries and 262144 bytes of text in total
per conversation. Every change moves the conversation's memory ``revision`` on by one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import cache
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, model_validator

from buddy.capabilities.memory.limits import (
    MEMORY_BATCH_ITEMS,
    MEMORY_KEY_SCHEMA,
    MEMORY_TEXT_BYTES,
    memory_key_refusal,
    memory_text_refusal,
)
from buddy.platform.limits import Refusal
from buddy.platform.protocol.conversation import Wire, refused
from buddy.platform.protocol.values import valid_unicode

__all__ = [
    "MemoryApplied",
    "MemoryBatch",
    "MemoryBatchWrite",
    "MemoryEntry",
    "MemoryList",
    "MemoryWrite",
    "MemoryWritten",
    "UnicodeText",
    "key_schema",
    "valid_unicode",
]


UnicodeText = Annotated[str, AfterValidator(valid_unicode)]
_TEXT = (
    f"At most {MEMORY_TEXT_BYTES} bytes in UTF-8 (bytes, not characters:"
    " `400 memory_text_too_long`)."
)
_REVISION = (
    "The conversation's memory revision after the request: it moves on by exactly one"
    " with every write, delete or non-empty batch."
)


def key_schema(schema: dict[str, Any]) -> None:
    """A memory key's JSON Schema (made when the document is built).

    ``MEMORY_KEY_SCHEMA``'s ``\\s`` is Python's whitespace (``str.isspace``), which the
    platform checks; JSON Schema validators read ``\\s`` as Unicode's White_Space, without
    U+001C–U+001F or U+0085, so the document spells Python's out.
    """
    schema.update({k: v for k, v in MEMORY_KEY_SCHEMA.items() if k != "pattern"})
    schema["pattern"] = f"^[^{_python_spaces()}/]+$"


@cache
def _python_spaces() -> str:
    """Every character ``str.isspace`` calls whitespace (a walk of all of Unicode, 0.1 s:
    once per process, not once per schema the document names a key in)."""
    return "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())


def _memory_text(text: str) -> str:
    refusal = memory_text_refusal(text)
    if refusal is not None:
        raise refused(refusal)
    return text


class MemoryWrite(Wire):
    """``PUT /internal/v1/memory/{key}``: the entry's new text (overwrites)."""

    text: Annotated[UnicodeText, AfterValidator(_memory_text)] = Field(
        description=_TEXT, json_schema_extra={"maxLength": MEMORY_TEXT_BYTES}
    )


class MemoryBatchWrite(Wire):
    """One write of a batch: the entry ``key`` gets ``text`` (the rules of a single write)."""

    key: str = Field(
        description="1–64 characters, no whitespace, no `/`: `400 memory_key_invalid`.",
        json_schema_extra=key_schema,
    )
    text: str = Field(description=_TEXT, json_schema_extra={"maxLength": MEMORY_TEXT_BYTES})


_Key = Annotated[str, Field(json_schema_extra=key_schema)]


class MemoryBatch(Wire):
    """``POST /internal/v1/memory``: several deletes and writes of one conversation,
    applied all or none — the deletes first, then the writes in order, each checked as
    its single request would be at that point."""

    deletes: list[_Key] = Field(
        default_factory=list,
        max_length=MEMORY_BATCH_ITEMS,
        description="Keys to delete (an absent one is no error).",
    )
    writes: list[MemoryBatchWrite] = Field(
        default_factory=list,
        max_length=MEMORY_BATCH_ITEMS,
        description="Entries to write, in order (a later write of a key wins).",
    )

    @model_validator(mode="after")
    def _limits(self) -> MemoryBatch:
        # The single requests' rules, by the same functions, the reason naming the item.
        for where, refusal in self._refusals():
            raise refused(Refusal(refusal.status, refusal.code, f"{where}: {refusal.reason}"))
        return self

    def _refusals(self) -> Iterator[tuple[str, Refusal]]:
        for i, key in enumerate(self.deletes):
            if (refusal := memory_key_refusal(key)) is not None:
                yield f"deletes[{i}]", refusal
        for i, write in enumerate(self.writes):
            refusal = memory_key_refusal(write.key) or memory_text_refusal(write.text)
            if refusal is not None:
                yield f"writes[{i}]", refusal


class MemoryEntry(BaseModel):
    """One memory entry."""

    key: str
    text: str
    updated_at: float = Field(description="Platform time of the last write, epoch seconds.")


class MemoryWritten(MemoryEntry):
    """``PUT /internal/v1/memory/{key}``: the entry written, and the revision it made."""

    revision: int = Field(description=_REVISION)


class MemoryList(BaseModel):
    """``GET /internal/v1/memory``: every entry, sorted by key, and the revision they are at."""

    entries: list[MemoryEntry]
    revision: int = Field(
        description="The conversation's memory revision these entries are at (0: never changed)."
    )


class MemoryApplied(BaseModel):
    """``POST /internal/v1/memory``: the batch was applied, whole."""

    revision: int = Field(description=_REVISION)
    updated_at: float = Field(description="Platform time of its writes, epoch seconds.")
