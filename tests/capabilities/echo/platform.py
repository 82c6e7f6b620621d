"""The echo capability on the dev platform: one table and two authenticated routes."""

from __future__ import annotations

import sqlite3
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from buddy.errors import Reject
from buddy.platform.dev.core import ConversationRow, conversation, platform_of
from tests.capabilities.echo.tools import ECHO_CHARS, ECHOES_MAX

TABLES = """
CREATE TABLE IF NOT EXISTS echoes (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);
"""

router = APIRouter(prefix="/internal/v1/echo", tags=["echo"])
Conv = Annotated[ConversationRow, Depends(conversation)]


class EchoIn(BaseModel):
    text: str = Field(min_length=1, max_length=ECHO_CHARS)


@router.post("")
async def keep(request: Request, conv: Conv, body: EchoIn) -> dict[str, object]:
    """Keep one text (at most ``ECHOES_MAX`` per conversation: 409 ``echo_full``)."""

    def write(conn: sqlite3.Connection) -> int:
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM echoes WHERE conversation_id = ?", (conv.id,)
        ).fetchone()
        if count >= ECHOES_MAX:
            raise Reject(409, "echo_full", f"a conversation keeps at most {ECHOES_MAX} echoes")
        conn.execute("INSERT INTO echoes VALUES (?, ?, ?)", (conv.id, count, body.text))
        return int(count) + 1

    return {"text": body.text, "count": await platform_of(request).store.write(write)}


@router.get("")
async def texts(request: Request, conv: Conv) -> dict[str, list[str]]:
    """Every text kept, oldest first."""

    def read(conn: sqlite3.Connection) -> list[str]:
        rows = conn.execute(
            "SELECT text FROM echoes WHERE conversation_id = ? ORDER BY seq", (conv.id,)
        ).fetchall()
        return [r["text"] for r in rows]

    return {"texts": await platform_of(request).store.read(read)}
