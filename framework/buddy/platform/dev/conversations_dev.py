"""The core part's ``/dev`` routes, behind the admin token: registering buddies, making
conversations, acting as their users (messages, option clicks), the clock, and what was
stored (transcripts, turn records, events)."""

from __future__ import annotations

import json
import sqlite3
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from buddy.errors import Reject
from buddy.platform.dev.conversations_store import members_of, read_turns
from buddy.platform.dev.core import admin, dumps, emit_in, hash_token, new_id, platform_of
from buddy.platform.dev.journal import journal_in
from buddy.platform.protocol.conversation import (
    BuddyCreated,
    ClockState,
    ConversationInfo,
    Member,
    MessageOut,
    NewBuddy,
    NewConversation,
    OptionClick,
    TurnRecord,
    UserMessage,
)

__all__ = ["dev_router", "user_says"]

dev_router = APIRouter(prefix="/dev", tags=["dev"], dependencies=[Depends(admin)])


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
        return members_of(conn, conversation_id)

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
            ConversationInfo(id=r["id"], kind=r["kind"], members=members_of(conn, r["id"]))
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
        members = members_of(conn, conversation_id)
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
    before = platform.clock.time()  # journalled at: what the move fires comes after it
    await platform.clock.advance(body.advance_seconds)
    offset = platform.clock.offset

    def save(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('clock_offset', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(offset),),
        )
        if body.advance_seconds > 0:
            journal_in(conn, "advance", before, {"seconds": body.advance_seconds})

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
