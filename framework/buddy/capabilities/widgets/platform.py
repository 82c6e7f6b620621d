"""The widgets capability: typed panels of records in a conversation, and their cards.

A buddy declares its widget types once per identity (``PUT /internal/v1/widget-types``,
uploaded by the runtime at start from ``widgets/<type>/schema.json``). A conversation's
widgets are rows of ``widgets``; their records live in ``widget_records`` with a revision
each. Deleting a widget keeps its row (marked deleted) so cards already sent can still
show its title and that it is gone; its records are removed. A widget forwarded to
another conversation of the same identity is a row of ``widget_refs``: readable there,
never writable. Every table hangs off ``conversations`` with ``ON DELETE CASCADE``.

Record data is validated with :class:`jsonschema.Draft202012Validator`; validators are
built once per (identity, type) and schema content, and reused until the type changes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
from typing import Annotated, Any

import jsonschema
from fastapi import APIRouter, Depends, Path, Request, Response
from jsonschema.exceptions import best_match
from referencing.exceptions import Unresolvable

from buddy.capabilities.widgets.wire import (
    RECORD_ID_CHARS,
    DevWidgets,
    ModuleRecords,
    NewWidget,
    Presentation,
    PresentationUpdate,
    Record,
    RecordWrite,
    RecordWritten,
    WidgetCard,
    WidgetCreated,
    WidgetForward,
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
    Platform,
    admin,
    conversation,
    dumps,
    identity,
    new_id,
    platform_of,
)

__all__ = [
    "LINKS",
    "STATUSES",
    "TABLES",
    "ValidatorCache",
    "dev_router",
    "router",
    "validator_cache",
]

TABLES = """
CREATE TABLE IF NOT EXISTS widget_types (
    identity TEXT NOT NULL,
    type TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    modules TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (identity, type)
);
CREATE TABLE IF NOT EXISTS widgets (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    title TEXT NOT NULL,
    summary TEXT,
    image_media_id TEXT,
    idempotency_key TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    deleted_at REAL,
    UNIQUE (conversation_id, idempotency_key)
);
CREATE INDEX IF NOT EXISTS widgets_conversation ON widgets (conversation_id, created_at);
CREATE TABLE IF NOT EXISTS widget_records (
    widget_id TEXT NOT NULL REFERENCES widgets (id) ON DELETE CASCADE,
    module TEXT NOT NULL,
    record_id TEXT NOT NULL,
    data TEXT NOT NULL,
    revision INTEGER NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (widget_id, module, record_id)
);
CREATE TABLE IF NOT EXISTS widget_refs (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    widget_id TEXT NOT NULL REFERENCES widgets (id) ON DELETE CASCADE,
    created_at REAL NOT NULL,
    PRIMARY KEY (conversation_id, widget_id)
);
CREATE INDEX IF NOT EXISTS widget_refs_widget ON widget_refs (widget_id);
CREATE TABLE IF NOT EXISTS widget_sends (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    idempotency_key TEXT NOT NULL,
    message_id TEXT NOT NULL,
    PRIMARY KEY (conversation_id, idempotency_key)
);
"""

router = APIRouter(prefix="/internal/v1", tags=["widgets"])
dev_router = APIRouter(prefix="/dev", tags=["dev"], dependencies=[Depends(admin)])

Conv = Annotated[ConversationRow, Depends(conversation)]
Who = Annotated[Identity, Depends(identity)]
WidgetId = Annotated[str, Path(description="The widget's id (`w_…`).")]
Module = Annotated[str, Path(description="A module of the widget's type.")]
RecordId = Annotated[
    str, Path(min_length=1, max_length=RECORD_ID_CHARS, description="Chosen by the caller.")
]

_REASON_DETAIL_CHARS = 300
_RECORD_SCHEMA_PROBLEMS = (Unresolvable, RecursionError)


# ---------------------------------------------------------------- validators


class ValidatorCache:
    """Record validators by (identity, type), rebuilt only when the type's schemas change.

    Used on the store's single worker thread only, so it needs no lock.

    Attributes:
        builds: How many times a type's validators were built (for tests).
    """

    def __init__(self) -> None:
        self._by_type: dict[tuple[str, str], tuple[str, dict[str, jsonschema.Validator]]] = {}
        self.builds = 0

    def get(
        self, conn: sqlite3.Connection, identity_name: str, type_: str
    ) -> dict[str, jsonschema.Validator] | None:
        """The validators of a declared type's modules, or ``None`` if it is not declared."""
        row = conn.execute(
            "SELECT digest FROM widget_types WHERE identity = ? AND type = ?",
            (identity_name, type_),
        ).fetchone()
        if row is None:
            return None
        cached = self._by_type.get((identity_name, type_))
        if cached is not None and cached[0] == row["digest"]:
            return cached[1]
        (text,) = conn.execute(
            "SELECT modules FROM widget_types WHERE identity = ? AND type = ?",
            (identity_name, type_),
        ).fetchone()
        modules: dict[str, dict[str, Any]] = json.loads(text)
        built: dict[str, jsonschema.Validator] = {
            name: jsonschema.Draft202012Validator(module["record"])
            for name, module in modules.items()
        }
        self._by_type[(identity_name, type_)] = (row["digest"], built)
        self.builds += 1
        return built


def validator_cache(platform: Platform) -> ValidatorCache:
    """The platform's record-validator cache (made on first use)."""
    cache = platform.extras.get("widget_validators")
    if not isinstance(cache, ValidatorCache):
        cache = ValidatorCache()
        platform.extras["widget_validators"] = cache
    return cache


def _clip(text: str) -> str:
    return text if len(text) <= _REASON_DETAIL_CHARS else text[:_REASON_DETAIL_CHARS] + "…"


def _check_record(validator: jsonschema.Validator, module: str, data: dict[str, Any]) -> None:
    try:
        error = best_match(validator.iter_errors(data))
    except _RECORD_SCHEMA_PROBLEMS as exc:
        raise Reject(
            400,
            "widget_schema_invalid",
            f"the record schema of module {module} cannot be evaluated: {_clip(str(exc))}",
        ) from None
    if error is not None:
        raise Reject(
            400,
            "record_schema_mismatch",
            f"record does not match the schema of module {module} at {error.json_path}:"
            f" {_clip(error.message)}",
        )


# ---------------------------------------------------------------- shared queries


def _presentation(row: sqlite3.Row) -> Presentation:
    return Presentation(summary=row["summary"], image_media_id=row["image_media_id"])


def _info(row: sqlite3.Row, can_edit: bool) -> WidgetInfo:
    return WidgetInfo(
        id=row["id"],
        type=row["type"],
        title=row["title"],
        can_edit=can_edit,
        presentation=_presentation(row),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _access(
    conn: sqlite3.Connection, conversation_id: str, widget_id: str
) -> tuple[sqlite3.Row, bool]:
    """A live widget readable in the conversation, and whether it may be changed there."""
    row = conn.execute(
        "SELECT * FROM widgets WHERE id = ? AND deleted_at IS NULL", (widget_id,)
    ).fetchone()
    if row is not None:
        if row["conversation_id"] == conversation_id:
            return row, True
        if conn.execute(
            "SELECT 1 FROM widget_refs WHERE conversation_id = ? AND widget_id = ?",
            (conversation_id, widget_id),
        ).fetchone():
            return row, False
    raise Reject(404, "widget_not_found", f"no widget {widget_id} in this conversation")


def _editable(conn: sqlite3.Connection, conversation_id: str, widget_id: str) -> sqlite3.Row:
    """A live widget of this conversation (403 for a forwarded, read-only one)."""
    row, can_edit = _access(conn, conversation_id, widget_id)
    if not can_edit:
        raise Reject(
            403,
            "widget_read_only",
            f"widget {widget_id} was forwarded from another conversation and is read-only here",
        )
    return row


def _declared_modules(conn: sqlite3.Connection, identity_name: str, type_: str) -> list[str] | None:
    row = conn.execute(
        "SELECT modules FROM widget_types WHERE identity = ? AND type = ?", (identity_name, type_)
    ).fetchone()
    return None if row is None else list(json.loads(row["modules"]))


def _modules(conn: sqlite3.Connection, identity_name: str, widget: sqlite3.Row) -> list[str]:
    """The widget's modules: its type's, in declared order, then any others holding records."""
    declared = _declared_modules(conn, identity_name, widget["type"]) or []
    stored = [
        r["module"]
        for r in conn.execute(
            "SELECT DISTINCT module FROM widget_records WHERE widget_id = ? ORDER BY module",
            (widget["id"],),
        )
    ]
    return declared + [m for m in stored if m not in declared]


def _records(conn: sqlite3.Connection, widget_id: str, module: str) -> list[Record]:
    rows = conn.execute(
        "SELECT record_id, data, revision, updated_at FROM widget_records"
        " WHERE widget_id = ? AND module = ? ORDER BY rowid",
        (widget_id, module),
    ).fetchall()
    return [
        Record(
            record_id=r["record_id"],
            data=json.loads(r["data"]),
            revision=r["revision"],
            updated_at=r["updated_at"],
        )
        for r in rows
    ]


def _full(
    conn: sqlite3.Connection, identity_name: str, widget: sqlite3.Row, can_edit: bool
) -> WidgetFull:
    modules = {
        name: ModuleRecords(records=_records(conn, widget["id"], name))
        for name in _modules(conn, identity_name, widget)
    }
    return WidgetFull(**_info(widget, can_edit).model_dump(), modules=modules)


def _module_of(
    conn: sqlite3.Connection, identity_name: str, widget: sqlite3.Row, module: str
) -> None:
    if module not in _modules(conn, identity_name, widget):
        raise Reject(
            404, "module_not_found", f"widget type {widget['type']} has no module {module}"
        )


def _touch(conn: sqlite3.Connection, widget_id: str, now: float) -> None:
    conn.execute("UPDATE widgets SET updated_at = ? WHERE id = ?", (now, widget_id))


def _listed(conn: sqlite3.Connection, conversation_id: str) -> list[tuple[sqlite3.Row, bool]]:
    """Live widgets of the conversation and those forwarded to it, oldest first."""
    rows = conn.execute(
        "SELECT w.*, 1 AS own, w.created_at AS listed_at FROM widgets w"
        " WHERE w.conversation_id = ? AND w.deleted_at IS NULL"
        " UNION ALL"
        " SELECT w.*, 0 AS own, r.created_at AS listed_at FROM widget_refs r"
        " JOIN widgets w ON w.id = r.widget_id"
        " WHERE r.conversation_id = ? AND w.deleted_at IS NULL"
        " ORDER BY listed_at, id",
        (conversation_id, conversation_id),
    ).fetchall()
    return [(r, bool(r["own"])) for r in rows]


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
            _check_schema(declared.type, name, module.record)
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


def _check_schema(type_: str, module: str, schema: dict[str, Any]) -> None:
    problem = _schema_problem(json.dumps(schema))
    if problem is not None:
        where, message = problem
        raise Reject(
            400,
            "widget_schema_invalid",
            f"widget type {type_}, module {module}: the record schema is not valid"
            f" Draft 2020-12 at {where}: {_clip(message)}",
        )
    if schema.get("type") != "object":
        raise Reject(
            400,
            "widget_schema_invalid",
            f"widget type {type_}, module {module}: the record schema must have type: object",
        )


@functools.lru_cache(maxsize=256)
def _schema_problem(text: str) -> tuple[str, str] | None:
    """Where and why the schema (as JSON text) is not valid Draft 2020-12, or ``None``.

    Remembered by the text: checking against the meta-schema takes ~2 ms, and a buddy
    uploads the same schemas at every start (each scenario of ``buddy test``).
    """
    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(text))
    except jsonschema.SchemaError as exc:
        return "/".join(str(p) for p in exc.path) or "(root)", exc.message
    return None


# ---------------------------------------------------------------- widgets


@router.get("/widgets", response_model=WidgetList)
async def list_widgets(request: Request, conv: Conv) -> WidgetList:
    """The conversation's live widgets, without records, oldest first.

    Widgets forwarded from another conversation are listed with ``can_edit: false``;
    deleted widgets are not listed.
    """

    def fetch(conn: sqlite3.Connection) -> WidgetList:
        return WidgetList(widgets=[_info(r, own) for r, own in _listed(conn, conv.id)])

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
        if _declared_modules(conn, conv.identity, body.type) is None:
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
        row, can_edit = _access(conn, conv.id, widget_id)
        return _full(conn, conv.identity, row, can_edit)

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
        _editable(conn, conv.id, widget_id)
        conn.execute(
            "UPDATE widgets SET title = ?, updated_at = ? WHERE id = ?",
            (body.title, now, widget_id),
        )
        row, can_edit = _access(conn, conv.id, widget_id)
        return _info(row, can_edit)

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
        _editable(conn, conv.id, widget_id)
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
        row = _editable(conn, conv.id, widget_id)
        summary = row["summary"] if body.summary is None else (body.summary or None)
        image = (
            row["image_media_id"] if body.image_media_id is None else (body.image_media_id or None)
        )
        conn.execute(
            "UPDATE widgets SET summary = ?, image_media_id = ?, updated_at = ? WHERE id = ?",
            (summary, image, now, widget_id),
        )
        row, can_edit = _access(conn, conv.id, widget_id)
        return _info(row, can_edit)

    return await platform.store.write(update)


@router.get("/widgets/{widget_id}/{module}", response_model=ModuleRecords)
async def read_module(
    request: Request, conv: Conv, widget_id: WidgetId, module: Module
) -> ModuleRecords:
    """One module's records, in the order first written (404 ``module_not_found``)."""

    def fetch(conn: sqlite3.Connection) -> ModuleRecords:
        row, _ = _access(conn, conv.id, widget_id)
        _module_of(conn, conv.identity, row, module)
        return ModuleRecords(records=_records(conn, widget_id, module))

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
        row = _editable(conn, conv.id, widget_id)
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
        _check_record(validator, module, body.data)
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
        _touch(conn, widget_id, now)
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
        row = _editable(conn, conv.id, widget_id)
        _module_of(conn, conv.identity, row, module)
        gone = conn.execute(
            "DELETE FROM widget_records WHERE widget_id = ? AND module = ? AND record_id = ?",
            (widget_id, module, record_id),
        ).rowcount
        if gone == 0:
            raise Reject(404, "record_not_found", f"module {module} has no record {record_id}")
        _touch(conn, widget_id, now)

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
        _access(conn, conv.id, body.widget_id)
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


# ---------------------------------------------------------------- dev endpoints


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
        return _info(row, False)

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
            _full(conn, conv["identity"], row, own) for row, own in _listed(conn, conversation_id)
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
                        else _presentation(row)
                    ),
                    sent_at=message["created_at"],
                )
            )
        return DevWidgets(widgets=widgets, cards=cards)

    return await platform_of(request).store.read(fetch)


# ---------------------------------------------------------------- OpenAPI

_READ_ONLY = "A forwarded widget is read-only"
#: Statuses beyond the common ones (``buddy.platform.dev.parts``).
STATUSES = {
    ("put", "/internal/v1/widgets/{widget_id}"): {"403": _READ_ONLY},
    ("delete", "/internal/v1/widgets/{widget_id}"): {"403": _READ_ONLY},
    ("put", "/internal/v1/widgets/{widget_id}/presentation"): {"403": _READ_ONLY},
    ("put", "/internal/v1/widgets/{widget_id}/{module}/{record_id}"): {
        "403": _READ_ONLY,
        "409": "`expected_revision` is not the record's revision (`revision_conflict`)",
    },
    ("delete", "/internal/v1/widgets/{widget_id}/{module}/{record_id}"): {"403": _READ_ONLY},
}
_RECORD = {
    "widget_id": "$request.path.widget_id",
    "module": "$request.path.module",
    "record_id": "$request.path.record_id",
}
#: Links from a created widget or a written record to what reads, changes or deletes it.
LINKS = {
    ("post", "/internal/v1/widgets", "201"): {
        f"{verb}Widget": (
            verb,
            "/internal/v1/widgets/{widget_id}",
            {"widget_id": "$response.body#/id"},
        )
        for verb in ("get", "put", "delete")
    }
    | {
        "SetPresentation": (
            "put",
            "/internal/v1/widgets/{widget_id}/presentation",
            {"widget_id": "$response.body#/id"},
        ),
        "ForwardWidget": (
            "post",
            "/dev/widgets/{widget_id}/forward",
            {"widget_id": "$response.body#/id"},
        ),
    },
    ("post", "/dev/conversations", "201"): {
        "ReadWidgets": (
            "get",
            "/dev/conversations/{conversation_id}/widgets",
            {"conversation_id": "$response.body#/id"},
        )
    },
    ("put", "/internal/v1/widgets/{widget_id}/{module}/{record_id}", "200"): {
        "DeleteRecord": (
            "delete",
            "/internal/v1/widgets/{widget_id}/{module}/{record_id}",
            _RECORD,
        ),
        "ReadModule": (
            "get",
            "/internal/v1/widgets/{widget_id}/{module}",
            {"widget_id": "$request.path.widget_id", "module": "$request.path.module"},
        ),
    },
}
