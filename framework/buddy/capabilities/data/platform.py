"""User-data access (seed §3.4): declarations, versioned grants, queries and consent cards.

Three layers meet here. The runtime's catalogue (:mod:`buddy.capabilities.data.datasets`) says which
datasets exist; the buddy's declaration (uploaded whole at start) says which of them it
needs and why; the user's grants say what it may read. A grant is stored per
``(identity, member_id, dataset)`` with the version of the declaration it was made at —
``sha256(id|purpose|schema_version)[:16]`` — so a re-upload with another purpose makes
queries answer ``notGranted`` until the user consents again. The dev identity
(``<buddyId>-dev``) has its own declaration and grants.

Location and calendar are not datasets: a consent card asks for a one-time result, kept
for :data:`~buddy.capabilities.data.limits.ONE_TIME_RESULT_SECONDS` of platform time and then
erased. The dev endpoints play the user: grant or revoke, turn a dataset off in a group,
answer cards, and override a member's (otherwise simulated) data.

Made of :mod:`~buddy.capabilities.data.platform_store` (the queries the routes share),
:mod:`~buddy.capabilities.data.platform_api` (the ``/internal/v1`` routes) and
:mod:`~buddy.capabilities.data.platform_dev` (the ``/dev`` routes); this module is the part
:mod:`buddy.platform.dev.parts` loads.
"""

from __future__ import annotations

from buddy.capabilities.data.platform_api import router
from buddy.capabilities.data.platform_dev import dev_router

__all__ = ["LINKS", "STATUSES", "TABLES", "dev_router", "router"]

TABLES = """
CREATE TABLE IF NOT EXISTS data_declarations (
    identity TEXT NOT NULL,
    dataset TEXT NOT NULL,
    position INTEGER NOT NULL,
    purpose TEXT NOT NULL,
    title TEXT NOT NULL,
    source TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    version TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (identity, dataset)
);
CREATE TABLE IF NOT EXISTS data_grants (
    identity TEXT NOT NULL,
    member_id TEXT NOT NULL,
    dataset TEXT NOT NULL,
    version TEXT NOT NULL,
    granted_at REAL NOT NULL,
    PRIMARY KEY (identity, member_id, dataset)
);
CREATE TABLE IF NOT EXISTS data_group_disabled (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    member_id TEXT NOT NULL,
    dataset TEXT NOT NULL,
    PRIMARY KEY (conversation_id, member_id, dataset)
);
CREATE TABLE IF NOT EXISTS data_overrides (
    member_id TEXT NOT NULL,
    dataset TEXT NOT NULL,
    items TEXT,
    updated_at REAL NOT NULL,
    PRIMARY KEY (member_id, dataset)
);
CREATE TABLE IF NOT EXISTS data_requests (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    idempotency_key TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('healthkit', 'location', 'calendar')),
    reason TEXT NOT NULL,
    datasets TEXT NOT NULL,
    calendar_days INTEGER,
    message_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    answered_at REAL,
    granted INTEGER,
    result TEXT,
    expires_at REAL,
    UNIQUE (conversation_id, idempotency_key)
);
"""


# ---------------------------------------------------------------- OpenAPI

#: Statuses beyond the common ones (``buddy.platform.dev.parts``).
STATUSES = {
    ("put", "/dev/group-settings"): {"404": "No such conversation or member"},
    ("put", "/dev/grants"): {"404": "No such member (`member_not_found`)"},
    ("get", "/dev/grants"): {"404": "No such identity or member"},
    ("get", "/dev/data"): {"404": "No such member (`member_not_found`)"},
    ("put", "/dev/data"): {"404": "No such member (`member_not_found`)"},
    ("delete", "/dev/data"): {"404": "No such member (`member_not_found`)"},
    ("post", "/internal/v1/data-access/requests"): {
        "200": "The idempotency key was used before: the earlier request"
    },
    ("post", "/internal/v1/data-access/query"): {
        "413": "The answer would be over 512 KiB (`response_too_large`)"
    },
    ("post", "/dev/data-access/requests/{request_id}/answer"): {
        "409": "Answered already (`request_answered`)"
    },
}
#: Links from a consent request to reading its result and answering it.
LINKS = {
    ("post", "/internal/v1/data-access/requests", "201"): {
        "ReadResult": (
            "get",
            "/internal/v1/data-access/results/{request_id}",
            {"request_id": "$response.body#/request_id"},
        ),
        "AnswerRequest": (
            "post",
            "/dev/data-access/requests/{request_id}/answer",
            {"request_id": "$response.body#/request_id"},
        ),
    },
}
