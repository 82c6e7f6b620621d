"""The queries the core part's routes share: a conversation's members, its stored turn
records (served repaired when one cannot be read as is), and the acknowledgements of an
identity's events."""

from __future__ import annotations

import json
import logging
import sqlite3
from typing import Any

from buddy.platform.protocol.conversation import Member, TurnRecord, TurnStep, step_content_refusal

__all__ = ["event_acks", "members_of", "read_turns"]

log = logging.getLogger("buddy.platform")


def members_of(conn: sqlite3.Connection, conversation_id: str) -> list[Member]:
    rows = conn.execute(
        "SELECT u.member_id, u.name FROM members m JOIN users u USING (member_id)"
        " WHERE m.conversation_id = ? ORDER BY m.rowid",  # as listed at creation
        (conversation_id,),
    ).fetchall()
    return [Member(member_id=r["member_id"], name=r["name"]) for r in rows]


def read_turns(
    conn: sqlite3.Connection, conversation_id: str, after: float, limit: int
) -> list[TurnRecord]:
    """Stored turn records, oldest first; one that cannot be read is served repaired."""
    rows = conn.execute(
        "SELECT event_id, record, created_at FROM turns WHERE conversation_id = ?"
        " AND created_at > ? ORDER BY created_at, rowid LIMIT ?",
        (conversation_id, after, limit),
    ).fetchall()
    return [_record(r["event_id"], r["record"], r["created_at"]) for r in rows]


def _record(event_id: str, raw: str, created_at: float) -> TurnRecord:
    """A stored record, or — when it cannot be served (written by an older version
    without today's limits, or damaged) — the same turn with each unreadable step
    replaced by a redacted one, so one bad record never makes a conversation unanswerable."""
    try:
        return TurnRecord.model_validate_json(raw)
    except ValueError:  # pydantic's ValidationError included
        pass
    try:
        loaded = json.loads(raw)
    except (ValueError, RecursionError):
        loaded = None
    record: dict[str, Any] = loaded if isinstance(loaded, dict) else {}
    fallback = {
        "event_id": event_id,
        "event_type": "message",
        "proactive": False,
        "user_text": None,
        "sender": None,
        "reply": None,
        "question": None,
        "data_read": False,
        "created_at": created_at,
    }
    steps = record.get("steps")
    repaired = [_step(step) for step in steps] if isinstance(steps, list) else []
    log.warning("turn %s: its stored record cannot be served as is; serving it repaired", event_id)
    kept = {name: record[name] for name in fallback if name in record}
    try:
        return TurnRecord.model_validate({**fallback, **kept, "steps": repaired})
    except ValueError:  # a damaged field besides the steps: keep only what the user said
        text = kept.get("user_text")
        return TurnRecord.model_validate(
            {**fallback, "user_text": text if isinstance(text, str) else None, "steps": repaired}
        )


def _step(raw: Any) -> TurnStep:
    """A stored step, or a redacted one of the same type when it cannot be served."""
    if isinstance(raw, dict) and step_content_refusal(0, raw.get("content")) is None:
        try:
            return TurnStep.model_validate(raw)
        except ValueError:
            pass
    kind = raw.get("type") if isinstance(raw, dict) else None
    tool = raw.get("tool") if isinstance(raw, dict) else None
    call_id = raw.get("call_id") if isinstance(raw, dict) else None
    return TurnStep(
        type=kind if kind in ("text", "reasoning", "tool_call", "tool_result") else "text",
        tool=tool if isinstance(tool, str) else None,
        call_id=call_id if isinstance(call_id, str) else None,
        redacted=True,
    )


def event_acks(
    conn: sqlite3.Connection, identity_name: str, event_id: str | None = None
) -> list[dict[str, Any]]:
    """``id`` and ``acked_at`` of the identity's events not acknowledged yet, and of
    ``event_id``'s: of ``GET /dev/events``, what a wait for acknowledgements reads."""
    rows = conn.execute(
        "SELECT id, acked_at FROM events WHERE identity = ? AND (acked_at IS NULL OR id = ?)"
        " ORDER BY seq",
        (identity_name, event_id),
    ).fetchall()
    return [dict(r) for r in rows]
