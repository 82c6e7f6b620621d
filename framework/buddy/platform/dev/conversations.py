"""Conversations, turns and history — and the dev endpoints that act as users.

The buddy commits each turn's output (``POST /internal/v1/conversation/turns``), once per
event: a retried commit answers ``duplicate`` and shows the user nothing new. A reply to
an event a capability gates (``Platform.gates``: a proactive run's quiet hours and limits)
passes those gates again at commit time. What the
runtime persists of a turn (steps, redactions) is stored as given and read back by
``GET /internal/v1/conversation/turns`` — the record later tests inspect.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from buddy.errors import Reject
from buddy.platform.dev.core import (
    ConversationRow,
    admin,
    conversation,
    dumps,
    emit_in,
    hash_token,
    new_id,
    platform_of,
)
from buddy.platform.protocol.conversation import (
    BuddyCreated,
    ClockState,
    ConversationInfo,
    Member,
    MessageOut,
    NewBuddy,
    NewConversation,
    OptionClick,
    Summary,
    TurnCommit,
    TurnCommitted,
    TurnRecord,
    TurnStep,
    UserMessage,
    step_content_refusal,
)

__all__ = ["LINKS", "STATUSES", "TABLES", "dev_router", "event_acks", "read_turns", "router"]

log = logging.getLogger("buddy.platform")

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

router = APIRouter(prefix="/internal/v1/conversation", tags=["conversation"])
dev_router = APIRouter(prefix="/dev", tags=["dev"], dependencies=[Depends(admin)])

Conv = Annotated[ConversationRow, Depends(conversation)]


def _members(conn: sqlite3.Connection, conversation_id: str) -> list[Member]:
    rows = conn.execute(
        "SELECT u.member_id, u.name FROM members m JOIN users u USING (member_id)"
        " WHERE m.conversation_id = ? ORDER BY m.rowid",  # as listed at creation
        (conversation_id,),
    ).fetchall()
    return [Member(member_id=r["member_id"], name=r["name"]) for r in rows]


@router.get("", response_model=ConversationInfo)
async def info(request: Request, conv: Conv) -> ConversationInfo:
    """The conversation's kind and members."""
    members = await platform_of(request).store.read(lambda c: _members(c, conv.id))
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


# ---------------------------------------------------------------- dev: users and the world


@dev_router.post("/buddies", response_model=BuddyCreated, status_code=201)
async def register_buddy(request: Request, body: NewBuddy) -> BuddyCreated:
    """Register a buddy; answers its production and dev tokens (shown once)."""
    import secrets

    platform = platform_of(request)
    created = BuddyCreated(
        buddy_id=body.buddy_id,
        token=f"bt_{secrets.token_urlsafe(24)}",
        dev_token=f"bdt_{secrets.token_urlsafe(24)}",
    )

    def insert(conn: sqlite3.Connection) -> None:
        if conn.execute("SELECT 1 FROM buddies WHERE buddy_id = ?", (body.buddy_id,)).fetchone():
            raise Reject(409, "buddy_exists", f"buddy {body.buddy_id} is already registered")
        conn.execute(
            "INSERT INTO buddies (buddy_id, token_hash, dev_token_hash, created_at) VALUES (?, ?, ?, ?)",
            (
                body.buddy_id,
                hash_token(created.token),
                hash_token(created.dev_token),
                platform.clock.time(),
            ),
        )

    await platform.store.write(insert)
    return created


@dev_router.post("/buddies/{buddy_id}/tokens", response_model=BuddyCreated)
async def rotate_tokens(request: Request, buddy_id: str) -> BuddyCreated:
    """Issue new tokens for a registered buddy (the old ones stop working)."""
    import secrets

    rotated = BuddyCreated(
        buddy_id=buddy_id,
        token=f"bt_{secrets.token_urlsafe(24)}",
        dev_token=f"bdt_{secrets.token_urlsafe(24)}",
    )

    def update(conn: sqlite3.Connection) -> None:
        changed = conn.execute(
            "UPDATE buddies SET token_hash = ?, dev_token_hash = ? WHERE buddy_id = ?",
            (hash_token(rotated.token), hash_token(rotated.dev_token), buddy_id),
        ).rowcount
        if not changed:
            raise Reject(404, "buddy_not_found", f"no buddy {buddy_id}")

    platform = platform_of(request)
    await platform.store.write(update)
    gateway = platform.extras.get("gateway")
    if gateway is not None:  # a connection made with an old token stops at once too
        gateway.revoke(buddy_id)
    return rotated


@dev_router.post("/conversations", response_model=ConversationInfo, status_code=201)
async def create_conversation(request: Request, body: NewConversation) -> ConversationInfo:
    """Create a private (one member) or group conversation for an identity.

    A private conversation has exactly one member (``400 private_needs_one_member``); a
    ``member_id`` listed twice is ``400 member_duplicate``.
    """
    platform = platform_of(request)
    conversation_id = new_id("c")
    now = platform.clock.time()

    def create(conn: sqlite3.Connection) -> list[Member]:
        buddy_id = body.identity.removesuffix("-dev")
        if not conn.execute("SELECT 1 FROM buddies WHERE buddy_id = ?", (buddy_id,)).fetchone():
            raise Reject(404, "buddy_not_found", f"no buddy for identity {body.identity}")
        conn.execute(
            "INSERT INTO conversations (id, identity, kind, title, created_at) VALUES (?, ?, ?, ?, ?)",
            (conversation_id, body.identity, body.kind, body.title, now),
        )
        seen: set[str] = set()
        for member in body.members:
            member_id = member.member_id or new_id("m")
            if member_id in seen:
                raise Reject(400, "member_duplicate", f"member {member_id} is listed twice")
            seen.add(member_id)
            conn.execute(
                "INSERT INTO users (member_id, name) VALUES (?, ?)"
                " ON CONFLICT (member_id) DO UPDATE SET name = excluded.name",
                (member_id, member.name),
            )
            conn.execute(
                "INSERT INTO members (conversation_id, member_id) VALUES (?, ?)",
                (conversation_id, member_id),
            )
        return _members(conn, conversation_id)

    members = await platform.store.write(create)
    return ConversationInfo(id=conversation_id, kind=body.kind, members=members)


@dev_router.get("/conversations", response_model=list[ConversationInfo])
async def list_conversations(
    request: Request, identity_name: Annotated[str, Query(alias="identity")]
) -> list[ConversationInfo]:
    """Every conversation of an identity."""

    def fetch(conn: sqlite3.Connection) -> list[ConversationInfo]:
        rows = conn.execute(
            "SELECT id, kind FROM conversations WHERE identity = ? ORDER BY created_at, id",
            (identity_name,),
        ).fetchall()
        return [
            ConversationInfo(id=r["id"], kind=r["kind"], members=_members(conn, r["id"]))
            for r in rows
        ]

    return await platform_of(request).store.read(fetch)


@dev_router.delete("/conversations/{conversation_id}", status_code=204)
async def delete_conversation(request: Request, conversation_id: str) -> None:
    """Delete a conversation with everything stored for it (memory, widgets, turns …)."""

    def delete(conn: sqlite3.Connection) -> None:
        if conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,)).rowcount == 0:
            raise Reject(404, "conversation_not_found", f"no conversation {conversation_id}")

    await platform_of(request).store.write(delete)


@dev_router.get("/conversations/{conversation_id}/messages", response_model=list[MessageOut])
async def transcript(request: Request, conversation_id: str) -> list[MessageOut]:
    """Everything the conversation's users saw, in order."""

    def fetch(conn: sqlite3.Connection) -> list[MessageOut]:
        rows = conn.execute(
            "SELECT id, sender, member_id, kind, body, created_at FROM messages"
            " WHERE conversation_id = ? ORDER BY seq",
            (conversation_id,),
        ).fetchall()
        return [
            MessageOut(
                id=r["id"],
                sender=r["sender"],
                member_id=r["member_id"],
                kind=r["kind"],
                body=json.loads(r["body"]),
                created_at=r["created_at"],
            )
            for r in rows
        ]

    return await platform_of(request).store.read(fetch)


@dev_router.get("/conversations/{conversation_id}/turns", response_model=list[TurnRecord])
async def stored_turns(request: Request, conversation_id: str) -> list[TurnRecord]:
    """The stored turn records (as the runtime persisted them)."""
    return await platform_of(request).store.read(
        lambda c: read_turns(c, conversation_id, 0, 100_000)
    )


async def user_says(
    request: Request, conversation_id: str, text: str, member_id: str | None, extra: dict[str, Any]
) -> dict[str, str]:
    """A user message: into the transcript, and an event for the buddy."""
    platform = platform_of(request)
    now = platform.clock.time()

    def say(conn: sqlite3.Connection) -> tuple[str, dict[str, str]]:
        row = conn.execute(
            "SELECT identity, kind FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None:
            raise Reject(404, "conversation_not_found", f"no conversation {conversation_id}")
        members = _members(conn, conversation_id)
        sender = _sender(members, row["kind"], member_id)
        message_id = new_id("msg")
        conn.execute(
            "INSERT INTO messages (id, conversation_id, sender, member_id, kind, body, created_at)"
            " VALUES (?, ?, 'user', ?, 'text', ?, ?)",
            (message_id, conversation_id, sender.member_id, dumps({"text": text, **extra}), now),
        )
        payload = {
            "message_id": message_id,
            "kind": row["kind"],
            "sender": sender.model_dump(),
            "text": text,
            **extra,
        }
        event_id = emit_in(conn, row["identity"], "message", conversation_id, payload, now)
        return row["identity"], {"message_id": message_id, "event_id": event_id}

    identity_name, ids = await platform.store.write(say)
    platform.notify(identity_name)
    return ids


def _sender(members: list[Member], kind: str, member_id: str | None) -> Member:
    if member_id is None:
        if kind == "group":
            raise Reject(400, "member_required", "in a group, say which member_id speaks")
        return members[0]
    for member in members:
        if member.member_id == member_id:
            return member
    raise Reject(400, "member_not_in_conversation", f"{member_id} is not in this conversation")


@dev_router.post("/conversations/{conversation_id}/messages", status_code=201)
async def send_user_message(
    request: Request, conversation_id: str, body: UserMessage
) -> dict[str, str]:
    """A user writes to the buddy."""
    return await user_says(request, conversation_id, body.text, body.member_id, {})


@dev_router.post("/conversations/{conversation_id}/options", status_code=201)
async def click_option(request: Request, conversation_id: str, body: OptionClick) -> dict[str, str]:
    """A user clicks a question card's option: the same as sending the option's text."""

    def card(conn: sqlite3.Connection) -> dict[str, Any] | None:
        row = conn.execute(
            "SELECT body FROM messages WHERE id = ? AND conversation_id = ? AND kind = 'question'",
            (body.message_id, conversation_id),
        ).fetchone()
        return json.loads(row["body"]) if row else None

    question = await platform_of(request).store.read(card)
    if question is None:
        raise Reject(404, "question_not_found", f"no question card {body.message_id} here")
    if body.option not in question["options"]:
        raise Reject(400, "option_unknown", f"{body.option!r} is not an option of that card")
    return await user_says(
        request, conversation_id, body.option, body.member_id, {"option_of": body.message_id}
    )


@dev_router.get("/clock")
async def get_clock(request: Request) -> dict[str, float]:
    """The platform's time and how far it was advanced."""
    clock = platform_of(request).clock
    return {"time": clock.time(), "offset": clock.offset}


@dev_router.post("/clock")
async def advance_clock(request: Request, body: ClockState) -> dict[str, float]:
    """Advance the platform's clock; due proactive triggers fire."""
    platform = platform_of(request)
    await platform.clock.advance(body.advance_seconds)
    offset = platform.clock.offset

    def save(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('clock_offset', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(offset),),
        )

    await platform.store.write(save)
    return {"time": platform.clock.time(), "offset": offset}


@dev_router.get("/events")
async def events(
    request: Request, identity_name: Annotated[str, Query(alias="identity")]
) -> list[dict[str, Any]]:
    """Every event stored for an identity, with its acknowledgement time."""

    def fetch(conn: sqlite3.Connection) -> list[dict[str, Any]]:
        rows = conn.execute(
            "SELECT id, type, conversation_id, payload, created_at, acked_at FROM events"
            " WHERE identity = ? ORDER BY seq",
            (identity_name,),
        ).fetchall()
        return [{**dict(r), "payload": json.loads(r["payload"])} for r in rows]

    return await platform_of(request).store.read(fetch)


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


# ---------------------------------------------------------------- OpenAPI

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
