"""The widgets' ``/dev`` routes: forward a widget to another conversation, and what the
playground shows of a conversation's widgets (:mod:`buddy.capabilities.widgets.platform`).
"""

from __future__ import annotations

import json
import sqlite3

from fastapi import APIRouter, Depends, Request

from buddy.capabilities.widgets.platform_api import WidgetId
from buddy.capabilities.widgets.platform_store import full, info, listed, presentation
from buddy.capabilities.widgets.wire import (
    DevWidgets,
    Presentation,
    WidgetCard,
    WidgetForward,
    WidgetInfo,
)
from buddy.errors import Reject
from buddy.platform.dev.core import admin, platform_of

__all__ = ["dev_router"]

dev_router = APIRouter(prefix="/dev", tags=["dev"], dependencies=[Depends(admin)])


@dev_router.post("/widgets/{widget_id}/forward", response_model=WidgetInfo, status_code=201)
async def forward_widget(request: Request, widget_id: WidgetId, body: WidgetForward) -> WidgetInfo:
    """Forward a widget into another conversation of the same identity, read-only there.

    Answers the widget as the target conversation lists it (``can_edit: false``).
    Forwarding again is harmless. 404 ``widget_not_found`` / ``conversation_not_found``;
    400 ``widget_forward_invalid`` for its own conversation or another identity's.
    """
    platform = platform_of(request)
    now = platform.clock.time()

    def forward(conn: sqlite3.Connection) -> WidgetInfo:
        row = conn.execute(
            "SELECT w.*, c.identity FROM widgets w JOIN conversations c ON c.id = w.conversation_id"
            " WHERE w.id = ? AND w.deleted_at IS NULL",
            (widget_id,),
        ).fetchone()
        if row is None:
            raise Reject(404, "widget_not_found", f"no widget {widget_id}")
        target = conn.execute(
            "SELECT identity FROM conversations WHERE id = ?", (body.conversation_id,)
        ).fetchone()
        if target is None:
            raise Reject(404, "conversation_not_found", f"no conversation {body.conversation_id}")
        if body.conversation_id == row["conversation_id"]:
            raise Reject(
                400,
                "widget_forward_invalid",
                f"widget {widget_id} already belongs to conversation {body.conversation_id}",
            )
        if target["identity"] != row["identity"]:
            raise Reject(
                400,
                "widget_forward_invalid",
                "a widget can only be forwarded to a conversation of the same identity",
            )
        conn.execute(
            "INSERT INTO widget_refs (conversation_id, widget_id, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT (conversation_id, widget_id) DO NOTHING",
            (body.conversation_id, widget_id, now),
        )
        return info(row, False)

    return await platform.store.write(forward)


@dev_router.get("/conversations/{conversation_id}/widgets", response_model=DevWidgets)
async def conversation_widgets(request: Request, conversation_id: str) -> DevWidgets:
    """For the playground: the conversation's widgets with records, and every card sent.

    A card shows its widget's current title and presentation, and whether it was deleted.
    """

    def fetch(conn: sqlite3.Connection) -> DevWidgets:
        conv = conn.execute(
            "SELECT identity FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if conv is None:
            raise Reject(404, "conversation_not_found", f"no conversation {conversation_id}")
        widgets = [
            full(conn, conv["identity"], row, own) for row, own in listed(conn, conversation_id)
        ]
        cards: list[WidgetCard] = []
        for message in conn.execute(
            "SELECT id, body, created_at FROM messages"
            " WHERE conversation_id = ? AND kind = 'widget' ORDER BY seq",
            (conversation_id,),
        ).fetchall():
            widget_id: str = json.loads(message["body"])["widget_id"]
            row = conn.execute("SELECT * FROM widgets WHERE id = ?", (widget_id,)).fetchone()
            cards.append(
                WidgetCard(
                    message_id=message["id"],
                    widget_id=widget_id,
                    title=None if row is None else row["title"],
                    deleted=row is None or row["deleted_at"] is not None,
                    presentation=(
                        Presentation(summary=None, image_media_id=None)
                        if row is None
                        else presentation(row)
                    ),
                    sent_at=message["created_at"],
                )
            )
        return DevWidgets(widgets=widgets, cards=cards)

    return await platform_of(request).store.read(fetch)
