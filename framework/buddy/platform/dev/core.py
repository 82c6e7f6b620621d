"""What every part of the dev platform shares: errors, identities, auth, the clock, events.

A capability module (memory, widgets, data, proactive …) is a FastAPI router plus the DDL
of its tables; it reaches the database through ``platform.store`` and the current
identity and conversation through the dependencies defined here.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from buddy.errors import Reject

if TYPE_CHECKING:
    from buddy.platform.dev.store import Store

__all__ = [
    "CORE_TABLES",
    "Clock",
    "ConversationRow",
    "EventGate",
    "Identity",
    "Platform",
    "Reject",
    "Revision",
    "admin",
    "conversation",
    "conversation_in",
    "dumps",
    "hash_token",
    "identity",
    "new_id",
    "platform_of",
]

CORE_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS buddies (
    buddy_id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    dev_token_hash TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS users (member_id TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('private', 'group')),
    title TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_identity ON conversations (identity);
CREATE TABLE IF NOT EXISTS members (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    member_id TEXT NOT NULL REFERENCES users (member_id),
    PRIMARY KEY (conversation_id, member_id)
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    identity TEXT NOT NULL,
    type TEXT NOT NULL,
    conversation_id TEXT,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL,
    acked_at REAL
);
CREATE INDEX IF NOT EXISTS events_pending ON events (identity, acked_at, seq);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    sender TEXT NOT NULL CHECK (sender IN ('user', 'buddy')),
    member_id TEXT,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_conversation ON messages (conversation_id, seq);
CREATE TABLE IF NOT EXISTS idempotency (
    identity TEXT NOT NULL,
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (identity, scope, key)
);
"""


def new_id(prefix: str) -> str:
    """A fresh opaque id such as ``w_3f2a…``."""
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def hash_token(token: str) -> str:
    """Tokens are stored hashed; a copy of the database does not leak them."""
    return hashlib.sha256(token.encode()).hexdigest()


def dumps(value: Any) -> str:
    """Compact JSON for storage."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(frozen=True, slots=True)
class Identity:
    """Who is calling: a buddy, with its production or its dev token.

    Attributes:
        buddy_id: The registered buddy id.
        dev: Whether a dev token was used; a dev identity is ``<buddy_id>-dev`` with its
            own grants, data and conversations.
    """

    buddy_id: str
    dev: bool

    @property
    def name(self) -> str:
        """The identity key used for all of its data."""
        return f"{self.buddy_id}-dev" if self.dev else self.buddy_id


@dataclass(frozen=True, slots=True)
class ConversationRow:
    """A conversation as capability handlers see it."""

    id: str
    identity: str
    kind: str
    member_ids: tuple[str, ...]

    @property
    def private(self) -> bool:
        """Whether this is a private (one user) conversation."""
        return self.kind == "private"


@dataclass(frozen=True, slots=True)
class EventGate:
    """What a turn commit answering an event of one type must pass (a capability's, such
    as proactive runs' quiet hours and limits), inside the commit's transaction.

    Attributes:
        refusal: ``(conn, conversation, event_id, payload, now) -> reason | None``: why the
            turn's reply may not be shown (the turn is stored as skipped with the reason).
        shown: ``(conn, conversation, payload, now) -> None``: called once the reply was
            put in the transcript.
    """

    refusal: Callable[[sqlite3.Connection, ConversationRow, str, dict[str, Any], float], str | None]
    shown: Callable[[sqlite3.Connection, ConversationRow, dict[str, Any], float], None]


#: A part's revision of one conversation's state: ``(conn, conversation_id) -> int``.
Revision = Callable[[sqlite3.Connection, str], int]


class Clock:
    """The platform's time: real time plus an offset that dev endpoints can advance.

    The offset is kept in the database so a restarted platform resumes the same dev time.
    """

    def __init__(self) -> None:
        self.offset = 0.0
        self.listeners: list[Callable[[], Awaitable[None]]] = []

    def time(self) -> float:
        """Seconds since the epoch, as the platform sees them."""
        return time.time() + self.offset

    def now(self) -> datetime:
        """The platform's current instant (UTC)."""
        return datetime.fromtimestamp(self.time(), UTC)

    async def advance(self, seconds: float) -> None:
        """Move the clock forward and let the scheduler catch up."""
        self.offset += max(0.0, seconds)
        for listener in list(self.listeners):
            await listener()


@dataclass
class Platform:
    """The dev platform's state, shared by every request handler.

    Attributes:
        store: The database.
        clock: The controllable clock.
        admin_token: Bearer token of the dev endpoints (`/dev/…`).
        notify: Called with an identity after an event for it was stored (the gateway
            delivers it if that identity is connected).
        extras: What a part keeps for the app's life (the gateway, caches).
        gates: Event type → what a commit answering such an event must pass.
        revisions: Part name → its revision of a conversation (``REVISION``).
        latest: Conversation id → part name → the revision its last change made, as the
            part's handlers in this process committed it (:meth:`moved`): what a reader in
            this process takes without a trip to the store.
    """

    store: Store
    clock: Clock
    admin_token: str
    notify: Callable[[str], None] = lambda identity: None
    extras: dict[str, Any] = field(default_factory=dict)
    gates: dict[str, EventGate] = field(default_factory=dict)
    revisions: dict[str, Revision] = field(default_factory=dict)
    latest: dict[str, dict[str, int]] = field(default_factory=dict)

    def revisions_in(self, conn: sqlite3.Connection, conversation_id: str | None) -> dict[str, int]:
        """The parts' revisions of a conversation, read inside a caller's transaction
        (what an event delivered now carries); ``{}`` for an event of no conversation."""
        if conversation_id is None:
            return {}
        return {name: read(conn, conversation_id) for name, read in self.revisions.items()}

    def moved(self, part: str, conversation_id: str, revision: int) -> None:
        """``part``'s revision of the conversation is now (at least) ``revision``: a
        handler calls it once the change is committed (:attr:`latest`)."""
        latest = self.latest.setdefault(conversation_id, {})
        latest[part] = max(latest.get(part, 0), revision)

    async def emit(
        self, identity: str, type_: str, conversation_id: str | None, payload: dict[str, Any]
    ) -> str:
        """Store an event for ``identity`` and hand it to the gateway; returns its id."""
        event_id = new_id("evt")
        now = self.clock.time()

        def insert(conn: sqlite3.Connection) -> None:
            emit_in(conn, identity, type_, conversation_id, payload, now, event_id)

        await self.store.write(insert)
        self.notify(identity)
        return event_id


def emit_in(
    conn: sqlite3.Connection,
    identity: str,
    type_: str,
    conversation_id: str | None,
    payload: dict[str, Any],
    now: float,
    event_id: str | None = None,
) -> str:
    """Insert an event inside a caller's transaction (call ``platform.notify`` after it)."""
    event_id = event_id or new_id("evt")
    conn.execute(
        "INSERT INTO events (id, identity, type, conversation_id, payload, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (event_id, identity, type_, conversation_id, dumps(payload), now),
    )
    return event_id


def platform_of(request: Request) -> Platform:
    """The platform state of the app serving ``request``."""
    platform: Platform = request.app.state.platform
    return platform


_bearer = HTTPBearer(auto_error=False, description="A buddy token, or the admin token on /dev.")


async def identity(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Identity:
    """The identity of the bearer token (401 when missing or unknown)."""
    if credentials is None:
        raise Reject(401, "unauthorized", "missing bearer token")
    return await identity_of_token(platform_of(request), credentials.credentials)


async def identity_of_token(platform: Platform, token: str) -> Identity:
    """Resolve a buddy token to its identity (401 when unknown)."""
    digest = hash_token(token)

    def find(conn: sqlite3.Connection) -> Identity | None:
        row = conn.execute(
            "SELECT buddy_id, dev_token_hash = ? AS dev FROM buddies"
            " WHERE token_hash = ? OR dev_token_hash = ?",
            (digest, digest, digest),
        ).fetchone()
        return Identity(row["buddy_id"], bool(row["dev"])) if row else None

    found = await platform.store.read(find)
    if found is None:
        raise Reject(401, "unauthorized", "unknown token")
    return found


async def admin(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Require the admin token (dev endpoints act as users and the world)."""
    expected = platform_of(request).admin_token
    if credentials is None or not secrets.compare_digest(credentials.credentials, expected):
        raise Reject(401, "unauthorized", "the dev endpoints need the admin token")


async def conversation(
    request: Request,
    who: Annotated[Identity, Depends(identity)],
    conversation_id: Annotated[
        str, Header(alias="X-Conversation-Id", description="The conversation the call is for.")
    ],
) -> ConversationRow:
    """The conversation named by ``X-Conversation-Id``, if it belongs to the caller."""
    found: ConversationRow = await platform_of(request).store.read(
        lambda conn: conversation_in(conn, who, conversation_id)
    )
    return found


def conversation_in(
    conn: sqlite3.Connection, who: Identity, conversation_id: str
) -> ConversationRow:
    """The conversation ``conversation_id`` if it belongs to ``who``, read inside a
    caller's transaction (a handler that checks it in its own write spends no read on it).

    Raises:
        Reject: 404 ``conversation_not_found``: there is none, or it is another identity's.
    """
    found = _conversation_row(conn, conversation_id)
    if found is None or found.identity != who.name:
        raise Reject(404, "conversation_not_found", f"no conversation {conversation_id}")
    return found


async def load_conversation(platform: Platform, conversation_id: str) -> ConversationRow | None:
    """A conversation by id, or ``None``."""
    found: ConversationRow | None = await platform.store.read(
        lambda conn: _conversation_row(conn, conversation_id)
    )
    return found


def _conversation_row(conn: sqlite3.Connection, conversation_id: str) -> ConversationRow | None:
    row = conn.execute(
        "SELECT id, identity, kind FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()
    if row is None:
        return None
    members = conn.execute(
        "SELECT member_id FROM members WHERE conversation_id = ? ORDER BY member_id",
        (conversation_id,),
    ).fetchall()
    return ConversationRow(
        row["id"], row["identity"], row["kind"], tuple(m["member_id"] for m in members)
    )
