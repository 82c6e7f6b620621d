"""The websocket gateway: events out to the buddy process, acknowledgements back.

One connection per identity. A newer connection supersedes the older, which is told why
and closed (code 4001); new tokens for a buddy close its connections (code 4401). Events are stored before they are sent and marked when
acknowledged; everything unacknowledged is sent again, in order, on the next connection —
delivery is at-least-once, and the buddy dedupes on the event id. Each event carries the
conversation's state revisions as of its delivery (``revisions``, :class:`~buddy.platform.
dev.core.Platform`), read with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from buddy.errors import Reject
from buddy.platform.dev.core import Platform, identity_of_token, new_id
from buddy.platform.protocol.events import SUPERSEDED_CLOSE_CODE

__all__ = ["Gateway", "router"]

log = logging.getLogger("buddy.platform.gateway")
router = APIRouter()
_UNAUTHORIZED_CLOSE_CODE = 4401


class _Session:
    def __init__(self, identity: str, websocket: WebSocket) -> None:
        self.identity = identity
        self.websocket = websocket
        self.id = new_id("sess")
        self.wake = asyncio.Event()
        self.superseded: str | None = None
        self.revoked = False
        self.last_sent = 0


class Gateway:
    """Live connections by identity, and delivery of stored events to them."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.sessions: dict[str, _Session] = {}
        platform.notify = self.notify

    def notify(self, identity: str) -> None:
        """An event for ``identity`` was stored: wake its sender, if connected."""
        session = self.sessions.get(identity)
        if session is not None:
            session.wake.set()

    def revoke(self, buddy_id: str) -> None:
        """The buddy's tokens were replaced: close the connections made with the old ones."""
        for name in (buddy_id, f"{buddy_id}-dev"):
            session = self.sessions.get(name)
            if session is not None:
                session.revoked = True
                session.wake.set()

    def connected(self, identity: str) -> bool:
        """Whether ``identity`` has a live connection."""
        return identity in self.sessions

    async def serve(self, websocket: WebSocket) -> None:
        """Handle one connection from accept to close."""
        token = _bearer(websocket.headers.get("authorization", ""))
        try:
            who = await identity_of_token(self.platform, token)
        except Reject:
            await websocket.close(code=_UNAUTHORIZED_CLOSE_CODE, reason="unknown token")
            return
        await websocket.accept()
        session = _Session(who.name, websocket)
        previous = self.sessions.get(who.name)
        self.sessions[who.name] = session
        if previous is not None:
            previous.superseded = f"another connection of {who.name} replaced this one"
            previous.wake.set()
        await websocket.send_json({"type": "hello", "identity": who.name, "session": session.id})
        sender = asyncio.create_task(self._send(session))
        try:
            await self._receive(session)
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
            if self.sessions.get(who.name) is session:
                del self.sessions[who.name]

    async def _receive(self, session: _Session) -> None:
        while True:
            try:
                raw = await session.websocket.receive_text()
            except (WebSocketDisconnect, RuntimeError):
                return
            try:
                message: dict[str, Any] = json.loads(raw)
            except ValueError:
                continue
            if message.get("type") == "ack" and isinstance(message.get("event_id"), str):
                await self._ack(session.identity, message["event_id"])
            elif message.get("type") == "ping":
                session.wake.set()

    async def _ack(self, identity: str, event_id: str) -> None:
        now = self.platform.clock.time()

        def mark(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE events SET acked_at = ? WHERE id = ? AND identity = ? AND acked_at IS NULL",
                (now, event_id, identity),
            )

        await self.platform.store.write(mark)

    async def _send(self, session: _Session) -> None:
        websocket = session.websocket
        try:
            while True:
                # Cleared before reading, so an event stored meanwhile wakes the next round.
                session.wake.clear()
                if session.revoked:
                    await websocket.close(code=_UNAUTHORIZED_CLOSE_CODE, reason="token replaced")
                    return
                if session.superseded is not None:
                    await websocket.send_json({"type": "supersede", "reason": session.superseded})
                    await websocket.close(code=SUPERSEDED_CLOSE_CODE, reason="superseded")
                    log.info("superseded a connection of %s", session.identity)
                    return
                for event in await self._pending(session):
                    seq = event.pop("_seq")
                    await websocket.send_json({"type": "event", "event": event})
                    session.last_sent = seq
                await session.wake.wait()
        except (WebSocketDisconnect, RuntimeError, OSError):
            return

    async def _pending(self, session: _Session) -> list[dict[str, Any]]:
        def fetch(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = conn.execute(
                "SELECT seq, id, type, conversation_id, payload, created_at FROM events"
                " WHERE identity = ? AND acked_at IS NULL AND seq > ? ORDER BY seq LIMIT 100",
                (session.identity, session.last_sent),
            ).fetchall()
            return [
                {
                    "_seq": r["seq"],
                    "id": r["id"],
                    "type": r["type"],
                    "conversation_id": r["conversation_id"],
                    "payload": json.loads(r["payload"]),
                    "created_at": r["created_at"],
                    **_revisions(self.platform, conn, r["conversation_id"]),
                }
                for r in rows
            ]

        events = await self.platform.store.read(fetch)
        # More may be waiting beyond this page: come round again without sleeping.
        if len(events) == 100:
            session.wake.set()
        return events


def _revisions(
    platform: Platform, conn: sqlite3.Connection, conversation_id: str | None
) -> dict[str, Any]:
    """The envelope's ``revisions`` as of this delivery (none without a conversation)."""
    found = platform.revisions_in(conn, conversation_id)
    return {"revisions": found} if found else {}


def _bearer(header: str) -> str:
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


@router.websocket("/internal/v1/gateway")
async def gateway(websocket: WebSocket) -> None:
    """The buddy process's event connection (``Authorization: Bearer <token>``)."""
    platform: Platform = websocket.app.state.platform
    live: Gateway = platform.extras["gateway"]
    await live.serve(websocket)
