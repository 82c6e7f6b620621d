"""The widgets tables' queries and row helpers the routes share, and the checks of
record schemas and records (:mod:`buddy.capabilities.widgets.platform`).
"""

from __future__ import annotations

import functools
import json
import sqlite3
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match
from referencing.exceptions import Unresolvable

from buddy.capabilities.widgets.wire import (
    ModuleRecords,
    Presentation,
    Record,
    WidgetFull,
    WidgetInfo,
)
from buddy.errors import Reject
from buddy.platform.dev.core import Platform

__all__ = [
    "ValidatorCache",
    "access",
    "check_record",
    "check_schema",
    "declared_modules",
    "editable",
    "full",
    "info",
    "listed",
    "module_of",
    "presentation",
    "records",
    "touch",
    "validator_cache",
]

_REASON_DETAIL_CHARS = 300
_RECORD_SCHEMA_PROBLEMS = (Unresolvable, RecursionError)


# ---------------------------------------------------------------- validators


class ValidatorCache:
    """Record validators by (identity, type), rebuilt only when the type's schemas change.

    Used inside the store's transactions only, which run one at a time, so it needs no lock.

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


def check_record(validator: jsonschema.Validator, module: str, data: dict[str, Any]) -> None:
    """Refuse ``data`` unless it matches the module's record schema (400)."""
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


def check_schema(type_: str, module: str, schema: dict[str, Any]) -> None:
    """Refuse a record schema that is not valid Draft 2020-12 or not ``type: object``."""
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


# ---------------------------------------------------------------- shared queries


def presentation(row: sqlite3.Row) -> Presentation:
    """What the widget's cards show."""
    return Presentation(summary=row["summary"], image_media_id=row["image_media_id"])


def info(row: sqlite3.Row, can_edit: bool) -> WidgetInfo:
    """The widget without its records, and whether it may be changed where it is read."""
    return WidgetInfo(
        id=row["id"],
        type=row["type"],
        title=row["title"],
        can_edit=can_edit,
        presentation=presentation(row),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def access(
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


def editable(conn: sqlite3.Connection, conversation_id: str, widget_id: str) -> sqlite3.Row:
    """A live widget of this conversation (403 for a forwarded, read-only one)."""
    row, can_edit = access(conn, conversation_id, widget_id)
    if not can_edit:
        raise Reject(
            403,
            "widget_read_only",
            f"widget {widget_id} was forwarded from another conversation and is read-only here",
        )
    return row


def declared_modules(conn: sqlite3.Connection, identity_name: str, type_: str) -> list[str] | None:
    """A declared type's modules in declared order, or ``None`` if it is not declared."""
    row = conn.execute(
        "SELECT modules FROM widget_types WHERE identity = ? AND type = ?", (identity_name, type_)
    ).fetchone()
    return None if row is None else list(json.loads(row["modules"]))


def _modules(conn: sqlite3.Connection, identity_name: str, widget: sqlite3.Row) -> list[str]:
    """The widget's modules: its type's, in declared order, then any others holding records."""
    declared = declared_modules(conn, identity_name, widget["type"]) or []
    stored = [
        r["module"]
        for r in conn.execute(
            "SELECT DISTINCT module FROM widget_records WHERE widget_id = ? ORDER BY module",
            (widget["id"],),
        )
    ]
    return declared + [m for m in stored if m not in declared]


def records(conn: sqlite3.Connection, widget_id: str, module: str) -> list[Record]:
    """One module's records, in the order first written."""
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


def full(
    conn: sqlite3.Connection, identity_name: str, widget: sqlite3.Row, can_edit: bool
) -> WidgetFull:
    """The widget with every module's records."""
    modules = {
        name: ModuleRecords(records=records(conn, widget["id"], name))
        for name in _modules(conn, identity_name, widget)
    }
    return WidgetFull(**info(widget, can_edit).model_dump(), modules=modules)


def module_of(
    conn: sqlite3.Connection, identity_name: str, widget: sqlite3.Row, module: str
) -> None:
    """Refuse a module the widget does not have (404 ``module_not_found``)."""
    if module not in _modules(conn, identity_name, widget):
        raise Reject(
            404, "module_not_found", f"widget type {widget['type']} has no module {module}"
        )


def touch(conn: sqlite3.Connection, widget_id: str, now: float) -> None:
    """Mark the widget changed at ``now``."""
    conn.execute("UPDATE widgets SET updated_at = ? WHERE id = ?", (now, widget_id))


def listed(conn: sqlite3.Connection, conversation_id: str) -> list[tuple[sqlite3.Row, bool]]:
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
