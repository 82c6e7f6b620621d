"""The memory capability: a conversation's ``key → text`` notes, kept by the platform.

Memory belongs to one conversation and goes with it (``ON DELETE CASCADE``). Every limit
is checked inside the write's transaction, so concurrent writes cannot together exceed
the entry count or the total size.
"""

from __future__ import annotations

import sqlite3
import sys
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from pydantic import AfterValidator
from starlette.convertors import Convertor, register_url_convertor

from buddy.capabilities.memory.limits import (
    MEMORY_KEY_CHARS,
    MEMORY_KEY_SCHEMA,
    memory_capacity_refusal,
    memory_key_refusal,
)
from buddy.capabilities.memory.wire import MemoryEntry, MemoryList, MemoryWrite
from buddy.errors import Reject
from buddy.platform.dev.core import ConversationRow, conversation, platform_of
from buddy.platform.protocol.conversation import refused

__all__ = ["LINKS", "PATH_CODES", "TABLES", "check_key", "router"]

TABLES = """
CREATE TABLE IF NOT EXISTS memory (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    text TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (conversation_id, key)
);
"""

router = APIRouter(prefix="/internal/v1/memory", tags=["memory"])

Conv = Annotated[ConversationRow, Depends(conversation)]


def _key(key: str) -> str:
    refusal = memory_key_refusal(key)
    if refusal is not None:
        raise refused(refusal)
    return key


def _key_schema(schema: dict[str, Any]) -> None:
    # MEMORY_KEY_SCHEMA's `\s` is Python's whitespace (str.isspace), which the platform
    # checks; JSON Schema validators read `\s` as Unicode's White_Space, without U+001C–
    # U+001F or U+0085. The document spells Python's out (made when it is built).
    schema.update({k: v for k, v in MEMORY_KEY_SCHEMA.items() if k != "pattern"})
    spaces = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
    schema["pattern"] = f"^[^{spaces}/]+$"


Key = Annotated[
    str,
    Path(
        description=(
            f"1–{MEMORY_KEY_CHARS} characters, no whitespace, no `/` "
            "(a `/` in the path is part of the key and makes it invalid):"
            " `400 memory_key_invalid`."
        ),
        json_schema_extra=_key_schema,
    ),
    AfterValidator(_key),
]


class _AnyText(Convertor[str]):
    """Like ``path`` but also matching newlines, so a key with one is refused as invalid
    (400 ``memory_key_invalid``) rather than not routed (404)."""

    regex = r"[\s\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("memory_key", _AnyText())


def check_key(key: str) -> None:
    """Refuse a memory key that is empty, too long, or has whitespace or ``/``.

    Raises:
        Reject: 400 ``memory_key_invalid`` with the rule it breaks.
    """
    refused = memory_key_refusal(key)
    if refused is not None:
        raise Reject.of(refused)


@router.get("", response_model=MemoryList)
async def list_memory(request: Request, conv: Conv) -> MemoryList:
    """Every memory entry of the conversation, sorted by key."""

    def fetch(conn: sqlite3.Connection) -> MemoryList:
        rows = conn.execute(
            "SELECT key, text, updated_at FROM memory WHERE conversation_id = ? ORDER BY key",
            (conv.id,),
        ).fetchall()
        return MemoryList(
            entries=[
                MemoryEntry(key=r["key"], text=r["text"], updated_at=r["updated_at"]) for r in rows
            ]
        )

    return await platform_of(request).store.read(fetch)


@router.put("/{key:memory_key}", response_model=MemoryEntry)
async def write_memory(request: Request, conv: Conv, key: Key, body: MemoryWrite) -> MemoryEntry:
    """Write one entry, replacing any text already under ``key``.

    Refused (400) when the key is invalid (``memory_key_invalid``), the text is over
    16384 UTF-8 bytes (``memory_text_too_long``), a new key would be the 65th entry
    (``memory_full``), or all texts together would exceed 262144 bytes after the write
    (``memory_total_too_large``). Overwriting a key never counts as a new entry.
    """
    size = len(body.text.encode("utf-8"))
    platform = platform_of(request)
    now = platform.clock.time()

    def write(conn: sqlite3.Connection) -> MemoryEntry:
        old = conn.execute(
            "SELECT bytes FROM memory WHERE conversation_id = ? AND key = ?", (conv.id, key)
        ).fetchone()
        count, total = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM memory WHERE conversation_id = ?",
            (conv.id,),
        ).fetchone()
        refusal = memory_capacity_refusal(
            count, total, old["bytes"] if old is not None else None, size
        )
        if refusal is not None:
            raise Reject.of(refusal)
        conn.execute(
            "INSERT INTO memory (conversation_id, key, text, bytes, updated_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (conversation_id, key) DO UPDATE SET"
            " text = excluded.text, bytes = excluded.bytes, updated_at = excluded.updated_at",
            (conv.id, key, body.text, size, now),
        )
        return MemoryEntry(key=key, text=body.text, updated_at=now)

    return await platform.store.write(write)


@router.delete("/{key:memory_key}", status_code=204)
async def delete_memory(request: Request, conv: Conv, key: Key) -> None:
    """Delete one entry; 204 also when there was none (an invalid key is still 400)."""

    def delete(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM memory WHERE conversation_id = ? AND key = ?", (conv.id, key))

    await platform_of(request).store.write(delete)


#: A memory key that is not UTF-8 is refused as the key it is (``buddy.platform.dev.parts``).
PATH_CODES = {"/internal/v1/memory/": "memory_key_invalid"}
#: Links from a write to the delete of the same key.
LINKS = {
    ("put", "/internal/v1/memory/{key}", "200"): {
        "DeleteMemory": ("delete", "/internal/v1/memory/{key}", {"key": "$response.body#/key"})
    },
}
