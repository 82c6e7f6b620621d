"""The memory capability: a conversation's ``key → text`` notes, kept by the platform.

Memory belongs to one conversation and goes with it (``ON DELETE CASCADE``). Every limit
is checked inside the write's transaction, so concurrent writes cannot together exceed
the entry count or the total size; a batch is one transaction, applied whole or not at
all. Each change (a write, a delete, a non-empty batch) moves the conversation's memory
**revision** on by exactly one in the same transaction: the answers carry it, and the
gateway stamps it on every event it delivers (:data:`REVISION`), so a buddy that knows
which revisions its own requests made can tell that nothing else wrote without reading
memory back (docs/protocol.md §6).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import AfterValidator
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException

from buddy.capabilities.memory.limits import (
    MEMORY_KEY_CHARS,
    memory_capacity_refusal,
    memory_key_refusal,
)
from buddy.capabilities.memory.wire import (
    MemoryApplied,
    MemoryBatch,
    MemoryEntry,
    MemoryList,
    MemoryWrite,
    MemoryWritten,
    key_schema,
)
from buddy.errors import Reject
from buddy.platform.dev.core import (
    ConversationRow,
    Identity,
    conversation,
    conversation_in,
    identity,
    identity_of_token,
    platform_of,
)
from buddy.platform.limits import Refusal
from buddy.platform.protocol.conversation import refused

__all__ = [
    "LINKS",
    "PATH_CODES",
    "REVISION",
    "TABLES",
    "check_key",
    "revision",
    "router",
]

TABLES = """
CREATE TABLE IF NOT EXISTS memory (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    text TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (conversation_id, key)
);
CREATE TABLE IF NOT EXISTS memory_revisions (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    revision INTEGER NOT NULL
);
"""

router = APIRouter(prefix="/internal/v1/memory", tags=["memory"])

Conv = Annotated[ConversationRow, Depends(conversation)]
Who = Annotated[Identity, Depends(identity)]
ConversationId = Annotated[
    str, Header(alias="X-Conversation-Id", description="The conversation the call is for.")
]


def _key(key: str) -> str:
    refusal = memory_key_refusal(key)
    if refusal is not None:
        raise refused(refusal)
    return key


Key = Annotated[
    str,
    Path(
        description=(
            f"1–{MEMORY_KEY_CHARS} characters, no whitespace, no `/` "
            "(a `/` in the path is part of the key and makes it invalid):"
            " `400 memory_key_invalid`."
        ),
        json_schema_extra=key_schema,
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


def revision(conn: sqlite3.Connection, conversation_id: str) -> int:
    """The conversation's memory revision (0 while its memory never changed)."""
    row = conn.execute(
        "SELECT revision FROM memory_revisions WHERE conversation_id = ?", (conversation_id,)
    ).fetchone()
    return int(row[0]) if row is not None else 0


#: The part's revision of a conversation, stamped on each event delivered (``revisions``).
REVISION = revision
#: The part's name among the platform's (its capability's), for ``Platform.moved``.
PART = "memory"


def _changed(conn: sqlite3.Connection, conversation_id: str) -> int:
    """One change more: the conversation's new memory revision."""
    (moved,) = conn.execute(
        "INSERT INTO memory_revisions (conversation_id, revision) VALUES (?, 1)"
        " ON CONFLICT (conversation_id) DO UPDATE SET revision = revision + 1"
        " RETURNING revision",
        (conversation_id,),
    ).fetchone()
    return int(moved)


def _put(
    conn: sqlite3.Connection, conversation_id: str, key: str, text: str, now: float
) -> Refusal | None:
    """Write one entry unless it does not fit (the refusal, nothing written): the one
    place the entry count and the total are checked, for single writes and batches."""
    size = len(text.encode("utf-8"))
    old = conn.execute(
        "SELECT bytes FROM memory WHERE conversation_id = ? AND key = ?", (conversation_id, key)
    ).fetchone()
    count, total = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM memory WHERE conversation_id = ?",
        (conversation_id,),
    ).fetchone()
    refusal = memory_capacity_refusal(count, total, old["bytes"] if old is not None else None, size)
    if refusal is not None:
        return refusal
    conn.execute(
        "INSERT INTO memory (conversation_id, key, text, bytes, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (conversation_id, key) DO UPDATE SET"
        " text = excluded.text, bytes = excluded.bytes, updated_at = excluded.updated_at",
        (conversation_id, key, text, size, now),
    )
    return None


def _delete(conn: sqlite3.Connection, conversation_id: str, key: str) -> None:
    conn.execute("DELETE FROM memory WHERE conversation_id = ? AND key = ?", (conversation_id, key))


@router.get("", response_model=MemoryList)
async def list_memory(request: Request, conv: Conv) -> MemoryList:
    """Every memory entry of the conversation, sorted by key, and the revision they are at."""

    def fetch(conn: sqlite3.Connection) -> MemoryList:
        rows = conn.execute(
            "SELECT key, text, updated_at FROM memory WHERE conversation_id = ? ORDER BY key",
            (conv.id,),
        ).fetchall()
        return MemoryList(
            entries=[
                MemoryEntry(key=r["key"], text=r["text"], updated_at=r["updated_at"]) for r in rows
            ],
            revision=revision(conn, conv.id),
        )

    return await platform_of(request).store.read(fetch)


async def apply_memory(
    request: Request, who: Who, conversation_id: ConversationId, body: MemoryBatch
) -> MemoryApplied:
    """Several deletes and writes of the conversation's memory in one transaction: the
    deletes first, then the writes in order, each held to the rules of its single request
    at that point (``memory_key_invalid``, ``memory_text_too_long``, ``memory_full``,
    ``memory_total_too_large``, the reason naming the item: ``writes[2]: …``). One refused
    item refuses the batch, and nothing of it is applied. At most
    ``MEMORY_BATCH_ITEMS`` deletes and as many writes. A non-empty batch moves the
    revision on by exactly one; an empty one answers the current revision."""
    platform = platform_of(request)
    now = platform.clock.time()

    def apply(conn: sqlite3.Connection) -> MemoryApplied:
        # The conversation checked in the batch's own transaction: one trip to the store.
        cid = conversation_in(conn, who, conversation_id).id
        if not body.deletes and not body.writes:
            return MemoryApplied(revision=revision(conn, cid), updated_at=now)
        for key in body.deletes:
            _delete(conn, cid, key)
        for i, write in enumerate(body.writes):
            refusal = _put(conn, cid, write.key, write.text, now)
            if refusal is not None:  # the store rolls the whole batch back
                raise Reject(refusal.status, refusal.code, f"writes[{i}]: {refusal.reason}")
        return MemoryApplied(revision=_changed(conn, cid), updated_at=now)

    applied = await platform.store.write(apply)
    platform.moved(PART, conversation_id, applied.revision)
    return applied


try:  # FastAPI's request telemetry (OpenTelemetry), in the versions that have it
    from fastapi.telemetry._api import _get_request_telemetry

    _telemetry: Callable[[], object | None] = _get_request_telemetry
except ImportError:  # pragma: no cover - older FastAPI
    _telemetry = lambda: None  # noqa: E731


Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class _BatchRoute(APIRoute):
    """``POST /internal/v1/memory`` — the save of automatic memory, once per message — with
    the request a client of the protocol sends handled without FastAPI's dependency
    machinery, a third of the app's handling of a batch (the token, the header and the
    body solved one by one, each through its own layers): a bearer token, one
    ``X-Conversation-Id``, an ``application/json`` body that parses and validates (by the
    route's own body field) go to :func:`apply_memory` directly — the same token check,
    the same handler, the same answer. Every other request (no token, a body that does
    not parse or validate, another content type, FastAPI's telemetry on) is FastAPI's,
    so each refusal is the one it was, in the same order. The route, its parameters and
    so the OpenAPI document are FastAPI's as declared."""

    def get_route_handler(self) -> Handler:
        standard = super().get_route_handler()
        body_field = self.body_field
        assert body_field is not None

        async def handle(request: Request) -> Response:
            headers = request.headers
            scheme, token = get_authorization_scheme_param(headers.get("authorization"))
            conversation_ids = headers.getlist("x-conversation-id")
            if (
                scheme.lower() != "bearer"
                or not token
                or len(conversation_ids) != 1
                or headers.get("content-type") != "application/json"
                or _telemetry() is not None
            ):
                return await standard(request)
            try:
                raw = await request.body()  # kept by the request: FastAPI's reads it there
            except HTTPException:  # over the size limit: raised on, as FastAPI does
                raise
            except Exception:
                return await standard(request)
            try:
                data = json.loads(raw) if raw else None
            except ValueError:
                return await standard(request)
            if data is None:
                return await standard(request)
            try:
                batch, errors = body_field.validate(data, {}, loc=("body",))
            except Exception:  # FastAPI's field API as another version has it: its path
                return await standard(request)
            if errors:
                return await standard(request)
            who = await identity_of_token(platform_of(request), token)
            applied = await apply_memory(request, who, conversation_ids[0], batch)
            # As FastAPI answers a response model: its JSON, by alias.
            return Response(applied.model_dump_json(by_alias=True), media_type="application/json")

        return handle


router.add_api_route(
    "",
    apply_memory,
    methods=["POST"],
    response_model=MemoryApplied,
    route_class_override=_BatchRoute,
)


@router.put("/{key:memory_key}", response_model=MemoryWritten)
async def write_memory(request: Request, conv: Conv, key: Key, body: MemoryWrite) -> MemoryWritten:
    """Write one entry, replacing any text already under ``key``.

    Refused (400) when the key is invalid (``memory_key_invalid``), the text is over
    16384 UTF-8 bytes (``memory_text_too_long``), a new key would be the 65th entry
    (``memory_full``), or all texts together would exceed 262144 bytes after the write
    (``memory_total_too_large``). Overwriting a key never counts as a new entry.
    """
    platform = platform_of(request)
    now = platform.clock.time()

    def write(conn: sqlite3.Connection) -> MemoryWritten:
        refusal = _put(conn, conv.id, key, body.text, now)
        if refusal is not None:
            raise Reject.of(refusal)
        moved = _changed(conn, conv.id)
        return MemoryWritten(key=key, text=body.text, updated_at=now, revision=moved)

    written = await platform.store.write(write)
    platform.moved(PART, conv.id, written.revision)
    return written


@router.delete("/{key:memory_key}", status_code=204)
async def delete_memory(request: Request, conv: Conv, key: Key) -> None:
    """Delete one entry; 204 also when there was none (an invalid key is still 400). The
    revision moves on either way."""

    def delete(conn: sqlite3.Connection) -> int:
        _delete(conn, conv.id, key)
        return _changed(conn, conv.id)

    platform = platform_of(request)
    platform.moved(PART, conv.id, await platform.store.write(delete))


#: A memory key that is not UTF-8 is refused as the key it is (``buddy.platform.dev.parts``).
PATH_CODES = {"/internal/v1/memory/": "memory_key_invalid"}
#: Links from a write to the delete of the same key.
LINKS = {
    ("put", "/internal/v1/memory/{key}", "200"): {
        "DeleteMemory": ("delete", "/internal/v1/memory/{key}", {"key": "$response.body#/key"})
    },
}
