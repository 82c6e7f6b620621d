"""The core part's ``/internal/v1/conversation`` routes, called by the buddy: the
conversation's members, the commit of a turn and its stored records, and the compaction
summary."""

from __future__ import annotations

import json
import math
import sqlite3
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from buddy.errors import Reject
from buddy.platform.dev.conversations_store import members_of, read_turns
from buddy.platform.dev.core import ConversationRow, conversation, dumps, new_id, platform_of
from buddy.platform.protocol.conversation import (
    ConversationInfo,
    Summary,
    TurnCommit,
    TurnCommitted,
    TurnRecord,
    step_content_refusal,
)

__all__ = ["router"]

router = APIRouter(prefix="/internal/v1/conversation", tags=["conversation"])

Conv = Annotated[ConversationRow, Depends(conversation)]


@router.get("", response_model=ConversationInfo)
async def info(request: Request, conv: Conv) -> ConversationInfo:
    """The conversation's kind and members."""
    members = await platform_of(request).store.read(lambda c: members_of(c, conv.id))
    return ConversationInfo(id=conv.id, kind=conv.kind, members=members)


@router.post("/turns", response_model=TurnCommitted)
async def commit_turn(request: Request, conv: Conv, body: TurnCommit) -> TurnCommitted:
    """Commit one turn's output: show its reply or question card, store its record.

    Each ``steps[i].content`` is at most ``STEP_CONTENT_DEPTH`` levels deep
    (``400 step_content_invalid``) and ``STEP_CONTENT_BYTES`` bytes as compact UTF-8 JSON
    (``400 step_content_too_large``); ``404 event_not_found`` for an event not of this
    conversation.
    """
    for index, step in enumerate(body.steps):
        refused = step_content_refusal(index, step.content)
        if refused is not None:
            raise Reject.of(refused)
    platform = platform_of(request)
    now = platform.clock.time()
    from buddy.extend import event_kinds  # the event types capabilities declare

    kinds = event_kinds()

    def commit(conn: sqlite3.Connection) -> TurnCommitted:
        event = conn.execute(
            "SELECT type, conversation_id, payload FROM events WHERE id = ? AND identity = ?",
            (body.event_id, conv.identity),
        ).fetchone()
        if event is None or event["conversation_id"] != conv.id:
            raise Reject(404, "event_not_found", f"no event {body.event_id} in this conversation")
        done = conn.execute(
            "SELECT message_ids FROM turns WHERE conversation_id = ? AND event_id = ?",
            (conv.id, body.event_id),
        ).fetchone()
        if done is not None:
            return TurnCommitted(status="duplicate", message_ids=json.loads(done["message_ids"]))
        payload = json.loads(event["payload"])
        kind = kinds.get(event["type"])
        is_proactive = kind is not None and kind.unasked  # a turn nobody asked for
        speaks = body.reply is not None or body.question is not None
        gate = platform.gates.get(event["type"]) if speaks else None
        reason = (gate.refusal(conn, conv, body.event_id, payload, now) or "") if gate else ""
        message_ids: list[str] = []
        if not reason:
            if body.reply is not None:
                message_ids.append(_say(conn, conv.id, "text", {"text": body.reply}, now))
            if body.question is not None:
                message_ids.append(_say(conn, conv.id, "question", body.question.model_dump(), now))
            if gate is not None:
                gate.shown(conn, conv, payload, now)
        record = {
            "event_id": body.event_id,
            "event_type": event["type"],
            "proactive": is_proactive,
            "user_text": payload.get("text"),
            "sender": payload.get("sender"),
            "reply": body.reply if not reason else None,
            "question": body.question.model_dump() if body.question and not reason else None,
            "steps": [s.model_dump() for s in body.steps],
            "data_read": body.data_read,
            "created_at": now,
        }
        status = "skipped" if reason else "committed"
        conn.execute(
            "INSERT INTO turns (conversation_id, event_id, status, record, message_ids, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (conv.id, body.event_id, status, dumps(record), dumps(message_ids), now),
        )
        return TurnCommitted(status=status, reason=reason, message_ids=message_ids)

    return await platform.store.write(commit)


def _say(
    conn: sqlite3.Connection, conversation_id: str, kind: str, body: dict[str, Any], now: float
) -> str:
    """Insert a buddy message into the transcript."""
    message_id = new_id("msg")
    conn.execute(
        "INSERT INTO messages (id, conversation_id, sender, member_id, kind, body, created_at)"
        " VALUES (?, ?, 'buddy', NULL, ?, ?, ?)",
        (message_id, conversation_id, kind, dumps(body), now),
    )
    return message_id


@router.get("/turns", response_model=list[TurnRecord])
async def turns(
    request: Request,
    conv: Conv,
    after: Annotated[
        float, Query(description="Only turns created after this time.", allow_inf_nan=False)
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> list[TurnRecord]:
    """The conversation's stored turns (what the runtime persisted), oldest first."""
    return await platform_of(request).store.read(lambda c: read_turns(c, conv.id, after, limit))


@router.put("/summary", response_model=Summary)
async def put_summary(request: Request, conv: Conv, body: Summary) -> Summary:
    """Store the compaction summary of the conversation's earlier turns."""
    platform = platform_of(request)
    now = platform.clock.time()

    def put(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO summaries (conversation_id, text, covers_until, updated_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (conversation_id) DO UPDATE SET"
            " text = excluded.text, covers_until = excluded.covers_until,"
            " updated_at = excluded.updated_at",
            (conv.id, body.text, body.covers_until, now),
        )

    await platform.store.write(put)
    return body


@router.get("/summary", response_model=Summary)
async def get_summary(request: Request, conv: Conv) -> Summary:
    """The compaction summary (404 when there is none yet)."""

    def get(conn: sqlite3.Connection) -> Summary | None:
        row = conn.execute(
            "SELECT text, covers_until FROM summaries WHERE conversation_id = ?", (conv.id,)
        ).fetchone()
        if row is None:
            return None
        covers = row["covers_until"]
        # An older version stored non-finite times; covering "nothing" keeps every turn.
        if not isinstance(covers, int | float) or not math.isfinite(covers):
            covers = 0.0
        return Summary.model_construct(text=row["text"], covers_until=float(covers))

    found = await platform_of(request).store.read(get)
    if found is None:
        raise Reject(404, "summary_not_found", "this conversation has no summary yet")
    return found
