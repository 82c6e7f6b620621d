"""The widgets' ``/internal/v1`` routes: the buddy declares its widget types, makes
widgets, writes their records and sends their cards
(:mod:`buddy.capabilities.widgets.platform`).
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response

from buddy.capabilities.widgets.platform_store import (
    access,
    check_record,
    check_schema,
    declared_modules,
    editable,
    full,
    info,
    listed,
    module_of,
    records,
    touch,
    validator_cache,
)
from buddy.capabilities.widgets.wire import (
    RECORD_ID_CHARS,
    ModuleRecords,
    NewWidget,
    PresentationUpdate,
    RecordWrite,
    RecordWritten,
    WidgetCreated,
    WidgetFull,
    WidgetInfo,
    WidgetList,
    WidgetRename,
    WidgetSend,
    WidgetSent,
    WidgetTypesSet,
    WidgetTypesUpload,
)
from buddy.errors import Reject
from buddy.platform.dev.core import (
    ConversationRow,
    Identity,
    conversation,
    dumps,
    identity,
    new_id,
    platform_of,
)

__all__ = ["WidgetId", "router"]

router = APIRouter(prefix="/internal/v1", tags=["widgets"])

Conv = Annotated[ConversationRow, Depends(conversation)]
Who = Annotated[Identity, Depends(identity)]
WidgetId = Annotated[str, Path(description="The widget's id (`w_…`).")]
Module = Annotated[str, Path(description="A module of the widget's type.")]
RecordId = Annotated[
    str, Path(min_length=1, max_length=RECORD_ID_CHARS, description="Chosen by the caller.")
]


# ---------------------------------------------------------------- widget types


@router.put("/widget-types", response_model=WidgetTypesSet)
async def put_types(request: Request, who: Who, body: WidgetTypesUpload) -> WidgetTypesSet:
    """Replace the identity's whole set of widget types (an empty list clears it).

    The runtime uploads its buddy's ``widgets/<type>/schema.json`` at start. Every
    module's record schema must be a valid Draft 2020-12 schema with ``type: object``
    (400 ``widget_schema_invalid``); a type id given twice is 400 ``widget_type_duplicate``.
    Widgets already created keep their type name and follow the new schemas.
    """
    rows: list[tuple[str, str, str, str, str]] = []
    seen: set[str] = set()
    for declared in body.types:
        if declared.type in seen:
            raise Reject(
                400, "widget_type_duplicate", f"widget type {declared.type} is declared twice"
            )
        seen.add(declared.type)
        modules: dict[str, dict[str, Any]] = {}
        for name, module in declared.modules.items():
            check_schema(declared.type, name, module.record)
            modules[name] = {"title": module.title or name, "record": module.record}
        text = dumps(modules)
        digest = hashlib.sha256(text.encode()).hexdigest()
        rows.append((declared.type, declared.title, declared.description or "", text, digest))

    def replace(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM widget_types WHERE identity = ?", (who.name,))
        conn.executemany(
            "INSERT INTO widget_types (identity, type, title, description, modules, digest)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(who.name, *row) for row in rows],
        )

    await platform_of(request).store.write(replace)
    return WidgetTypesSet(types=sorted(seen))


# ---------------------------------------------------------------- widgets


@router.get("/widgets", response_model=WidgetList)
async def list_widgets(request: Request, conv: Conv) -> WidgetList:
    """The conversation's live widgets, without records, oldest first.

    Widgets forwarded from another conversation are listed with ``can_edit: false``;
    deleted widgets are not listed.
    """

    def fetch(conn: sqlite3.Connection) -> WidgetList:
        return WidgetList(widgets=[info(r, own) for r, own in listed(conn, conv.id)])

    return await platform_of(request).store.read(fetch)


@router.post(
    "/widgets",
    response_model=WidgetCreated,
    status_code=201,
    responses={200: {"model": WidgetCreated, "description": "Repeated idempotency key."}},
)
async def create_widget(
    request: Request, response: Response, conv: Conv, body: NewWidget
) -> WidgetCreated:
    """Create a widget of a declared type (201).

    With an ``idempotency_key`` already used in this conversation, nothing is created and
    the earlier widget's id is answered with 200 (even if that widget was deleted since).
    An undeclared type is 400 ``widget_type_unknown``.
    """
    platform = platform_of(request)
    now = platform.clock.time()

    def create(conn: sqlite3.Connection) -> tuple[str, bool]:
        if body.idempotency_key is not None:
            earlier = conn.execute(
                "SELECT id FROM widgets WHERE conversation_id = ? AND idempotency_key = ?",
                (conv.id, body.idempotency_key),
            ).fetchone()
            if earlier is not None:
                return earlier["id"], False
        if declared_modules(conn, conv.identity, body.type) is None:
            raise Reject(
                400, "widget_type_unknown", f"widget type {body.type} is not declared by this buddy"
            )
        widget_id = new_id("w")
        conn.execute(
            "INSERT INTO widgets (id, conversation_id, type, title, idempotency_key,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (widget_id, conv.id, body.type, body.title, body.idempotency_key, now, now),
        )
        return widget_id, True

    widget_id, created = await platform.store.write(create)
    if not created:
        response.status_code = 200
    return WidgetCreated(id=widget_id)


@router.get("/widgets/{widget_id}", response_model=WidgetFull)
async def read_widget(request: Request, conv: Conv, widget_id: WidgetId) -> WidgetFull:
    """The widget with every module's records (404 ``widget_not_found``, also once deleted)."""

    def fetch(conn: sqlite3.Connection) -> WidgetFull:
        row, can_edit = access(conn, conv.id, widget_id)
        return full(conn, conv.identity, row, can_edit)

    return await platform_of(request).store.read(fetch)


@router.put("/widgets/{widget_id}", response_model=WidgetInfo)
async def rename_widget(
    request: Request, conv: Conv, widget_id: WidgetId, body: WidgetRename
) -> WidgetInfo:
    """Rename the widget; its id stays, and cards already sent show the new title.

    403 ``widget_read_only`` for a widget forwarded from another conversation.
    """
    platform = platform_of(request)
    now = platform.clock.time()

    def rename(conn: sqlite3.Connection) -> WidgetInfo:
        editable(conn, conv.id, widget_id)
        conn.execute(
            "UPDATE widgets SET title = ?, updated_at = ? WHERE id = ?",
            (body.title, now, widget_id),
        )
        row, can_edit = access(conn, conv.id, widget_id)
        return info(row, can_edit)

    return await platform.store.write(rename)


@router.delete("/widgets/{widget_id}", status_code=204)
async def delete_widget(request: Request, conv: Conv, widget_id: WidgetId) -> None:
    """Delete the widget and its records; cards already sent stay and show it deleted.

    404 ``widget_not_found`` when absent or already deleted; 403 ``widget_read_only`` for
    a forwarded widget.
    """
    platform = platform_of(request)
    now = platform.clock.time()

    def delete(conn: sqlite3.Connection) -> None:
        editable(conn, conv.id, widget_id)
        conn.execute("DELETE FROM widget_records WHERE widget_id = ?", (widget_id,))
        conn.execute("DELETE FROM widget_refs WHERE widget_id = ?", (widget_id,))
        conn.execute(
            "UPDATE widgets SET deleted_at = ?, updated_at = ? WHERE id = ?", (now, now, widget_id)
        )

    await platform.store.write(delete)


@router.put("/widgets/{widget_id}/presentation", response_model=WidgetInfo)
async def set_presentation(
    request: Request, conv: Conv, widget_id: WidgetId, body: PresentationUpdate
) -> WidgetInfo:
    """Set what the widget's cards show: ``summary`` (≤ 500 characters) and cover image.

    A field left out (or ``null``) is unchanged; ``""`` removes it. 403
    ``widget_read_only`` for a forwarded widget.
    """
    platform = platform_of(request)
    now = platform.clock.time()

    def update(conn: sqlite3.Connection) -> WidgetInfo:
        row = editable(conn, conv.id, widget_id)
        summary = row["summary"] if body.summary is None else (body.summary or None)
        image = (
            row["image_media_id"] if body.image_media_id is None else (body.image_media_id or None)
        )
        conn.execute(
            "UPDATE widgets SET summary = ?, image_media_id = ?, updated_at = ? WHERE id = ?",
            (summary, image, now, widget_id),
        )
        row, can_edit = access(conn, conv.id, widget_id)
        return info(row, can_edit)

    return await platform.store.write(update)


@router.get("/widgets/{widget_id}/{module}", response_model=ModuleRecords)
async def read_module(
    request: Request, conv: Conv, widget_id: WidgetId, module: Module
) -> ModuleRecords:
    """One module's records, in the order first written (404 ``module_not_found``)."""

    def fetch(conn: sqlite3.Connection) -> ModuleRecords:
        row, _ = access(conn, conv.id, widget_id)
        module_of(conn, conv.identity, row, module)
        return ModuleRecords(records=records(conn, widget_id, module))

    return await platform_of(request).store.read(fetch)


@router.put("/widgets/{widget_id}/{module}/{record_id}", response_model=RecordWritten)
async def write_record(
    request: Request,
    conv: Conv,
    widget_id: WidgetId,
    module: Module,
    record_id: RecordId,
    body: RecordWrite,
) -> RecordWritten:
    """Write a whole record (create or overwrite); answers its new revision.

    Revisions start at 1 and go up by one per write. With ``expected_revision`` the write
    happens only if the record is at that revision (0: only if it does not exist) —
    otherwise 409 ``revision_conflict``. ``data`` must match the module's record schema
    (400 ``record_schema_mismatch``, naming the failing path). 403 ``widget_read_only``
    for a forwarded widget; 404 ``module_not_found`` for a module the type lacks.
    """
    platform = platform_of(request)
    now = platform.clock.time()
    cache = validator_cache(platform)

    def write(conn: sqlite3.Connection) -> RecordWritten:
        row = editable(conn, conv.id, widget_id)
        validators = cache.get(conn, conv.identity, row["type"])
        if validators is None:
            raise Reject(
                400,
                "widget_type_unknown",
                f"widget type {row['type']} is no longer declared by this buddy",
            )
        validator = validators.get(module)
        if validator is None:
            raise Reject(
                404, "module_not_found", f"widget type {row['type']} has no module {module}"
            )
        check_record(validator, module, body.data)
        current = conn.execute(
            "SELECT revision FROM widget_records WHERE widget_id = ? AND module = ? AND record_id = ?",
            (widget_id, module, record_id),
        ).fetchone()
        revision: int | None = None if current is None else current["revision"]
        _check_revision(record_id, revision, body.expected_revision)
        new = 1 if revision is None else revision + 1
        conn.execute(
            "INSERT INTO widget_records (widget_id, module, record_id, data, revision, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (widget_id, module, record_id) DO UPDATE SET"
            " data = excluded.data, revision = excluded.revision, updated_at = excluded.updated_at",
            (widget_id, module, record_id, dumps(body.data), new, now),
        )
        touch(conn, widget_id, now)
        return RecordWritten(revision=new)

    return await platform.store.write(write)


def _check_revision(record_id: str, revision: int | None, expected: int | None) -> None:
    if expected is None:
        return
    if expected == 0 and revision is not None:
        raise Reject(
            409,
            "revision_conflict",
            f"record {record_id} already exists at revision {revision};"
            " expected_revision 0 means it must not exist",
        )
    if expected > 0 and revision is None:
        raise Reject(
            409,
            "revision_conflict",
            f"record {record_id} does not exist; expected revision {expected}",
        )
    if expected > 0 and revision != expected:
        raise Reject(
            409,
            "revision_conflict",
            f"record {record_id} is at revision {revision}; expected revision {expected}",
        )


@router.delete("/widgets/{widget_id}/{module}/{record_id}", status_code=204)
async def delete_record(
    request: Request, conv: Conv, widget_id: WidgetId, module: Module, record_id: RecordId
) -> None:
    """Delete one record (404 ``record_not_found`` when absent; 403 for a forwarded widget)."""
    platform = platform_of(request)
    now = platform.clock.time()

    def delete(conn: sqlite3.Connection) -> None:
        row = editable(conn, conv.id, widget_id)
        module_of(conn, conv.identity, row, module)
        gone = conn.execute(
            "DELETE FROM widget_records WHERE widget_id = ? AND module = ? AND record_id = ?",
            (widget_id, module, record_id),
        ).rowcount
        if gone == 0:
            raise Reject(404, "record_not_found", f"module {module} has no record {record_id}")
        touch(conn, widget_id, now)

    await platform.store.write(delete)


@router.post("/messages", response_model=WidgetSent, status_code=202)
async def send_widget(request: Request, conv: Conv, body: WidgetSend) -> WidgetSent:
    """Enqueue a widget card into the chat (202); answers its message id.

    The same ``idempotency_key`` in this conversation answers the same message and adds
    no second card. The widget must be readable here (forwarded ones may be sent);
    404 ``widget_not_found`` otherwise.
    """
    platform = platform_of(request)
    now = platform.clock.time()

    def send(conn: sqlite3.Connection) -> str:
        earlier = conn.execute(
            "SELECT message_id FROM widget_sends WHERE conversation_id = ? AND idempotency_key = ?",
            (conv.id, body.idempotency_key),
        ).fetchone()
        if earlier is not None:
            message_id: str = earlier["message_id"]
            return message_id
        access(conn, conv.id, body.widget_id)
        message_id = new_id("msg")
        conn.execute(
            "INSERT INTO messages (id, conversation_id, sender, member_id, kind, body, created_at)"
            " VALUES (?, ?, 'buddy', NULL, 'widget', ?, ?)",
            (message_id, conv.id, dumps({"widget_id": body.widget_id}), now),
        )
        conn.execute(
            "INSERT INTO widget_sends (conversation_id, idempotency_key, message_id)"
            " VALUES (?, ?, ?)",
            (conv.id, body.idempotency_key, message_id),
        )
        return message_id

    return WidgetSent(message_id=await platform.store.write(send))
