"""Proactive subscriptions, the scheduler and the gates.

A buddy subscribes by stable key in a private conversation (create, or update and
re-enable); at most ``SUBSCRIPTIONS_ACTIVE_MAX`` are active per user and identity. A
subscription fires on its trigger: a schedule (first at ``at``, then every
``interval_minutes`` on a fixed grid; a missed run fires once) checked by :func:`tick`,
or an event of the world (``POST /dev/triggers``). Every firing is a *run*; the gates
— quiet hours in the subscription's timezone, cooldown since the last *shown* message,
the daily limit of shown messages in the subscription's local day — either let it
through (a ``proactive`` event for the buddy) or skip it with a reason. When the buddy
commits the turn's reply, :func:`commit_gate` checks them again (plus "subscription
closed") and :func:`record_delivery` counts what was shown.

Made of :mod:`~buddy.capabilities.proactive.platform_store` (the queries and row helpers
the routes share), :mod:`~buddy.capabilities.proactive.platform_scheduler` (the scheduler
and the gates), :mod:`~buddy.capabilities.proactive.platform_api` (the ``/internal/v1``
routes) and :mod:`~buddy.capabilities.proactive.platform_dev` (the ``/dev`` routes); this
module is the part :mod:`buddy.platform.dev.parts` loads.
"""

from __future__ import annotations

from buddy.capabilities.proactive.platform_api import router
from buddy.capabilities.proactive.platform_dev import dev_router
from buddy.capabilities.proactive.platform_scheduler import (
    EVENT_GATES,
    commit_gate,
    record_delivery,
    tick,
)

__all__ = [
    "EVENT_GATES",
    "LINKS",
    "PATH_CODES",
    "STATUSES",
    "TABLES",
    "commit_gate",
    "dev_router",
    "record_delivery",
    "router",
    "tick",
]

TABLES = """
CREATE TABLE IF NOT EXISTS proactive_subscriptions (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    identity TEXT NOT NULL,
    member_id TEXT NOT NULL,
    title TEXT NOT NULL,
    reason TEXT NOT NULL,
    trigger_json TEXT NOT NULL,
    trigger_type TEXT NOT NULL,
    dataset TEXT,
    quiet_start TEXT NOT NULL,
    quiet_end TEXT NOT NULL,
    timezone TEXT NOT NULL,
    cooldown_minutes INTEGER NOT NULL,
    daily_limit INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'closed')),
    next_run REAL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (conversation_id, key)
);
CREATE INDEX IF NOT EXISTS proactive_due ON proactive_subscriptions (status, next_run);
CREATE INDEX IF NOT EXISTS proactive_member
    ON proactive_subscriptions (identity, member_id, status);
CREATE TABLE IF NOT EXISTS proactive_runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    identity TEXT NOT NULL,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    subscription_key TEXT NOT NULL,
    trigger_type TEXT NOT NULL,
    due_at REAL,
    status TEXT NOT NULL CHECK (status IN ('fired', 'skipped', 'cancelled')),
    gate TEXT,
    reason TEXT NOT NULL,
    event_id TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS proactive_runs_identity ON proactive_runs (identity, seq);
CREATE INDEX IF NOT EXISTS proactive_runs_subscription
    ON proactive_runs (conversation_id, subscription_key, status);
CREATE TABLE IF NOT EXISTS proactive_deliveries (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    subscription_key TEXT NOT NULL,
    shown_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS proactive_deliveries_key
    ON proactive_deliveries (conversation_id, subscription_key, shown_at);
"""

# ---------------------------------------------------------------- OpenAPI

#: A subscription key that is not UTF-8 is refused as the key it is.
PATH_CODES = {"/internal/v1/proactive/subscriptions/": "subscription_invalid"}
#: Statuses beyond the common ones (``buddy.platform.dev.parts``).
STATUSES = {
    ("post", "/dev/triggers"): {"404": "No such identity or member"},
    ("put", "/internal/v1/proactive/subscriptions/{key}"): {
        "409": "The user's limit of active subscriptions (`subscriptions_limit`)"
    },
}
#: Links from a subscribe to the unsubscribe of the same key.
LINKS = {
    ("put", "/internal/v1/proactive/subscriptions/{key}", "200"): {
        "Unsubscribe": (
            "delete",
            "/internal/v1/proactive/subscriptions/{key}",
            {"key": "$response.body#/key"},
        )
    },
}
