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

Made of :mod:`~buddy.capabilities.widgets.platform_store` (the queries and row helpers the
routes share, the record validators), :mod:`~buddy.capabilities.widgets.platform_api` (the
``/internal/v1`` routes) and :mod:`~buddy.capabilities.widgets.platform_dev` (the ``/dev``
routes); this module is the part :mod:`buddy.platform.dev.parts` loads.
"""

from __future__ import annotations

from buddy.capabilities.widgets.platform_api import router
from buddy.capabilities.widgets.platform_dev import dev_router
from buddy.capabilities.widgets.platform_store import ValidatorCache, validator_cache

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
