"""The proactive tables' queries and row helpers the routes share: a subscription and its
answer, a run, closing a subscription (:mod:`buddy.capabilities.proactive.platform`).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from buddy.capabilities.proactive.manifest import DataUpdatedTrigger
from buddy.capabilities.proactive.wire import TRIGGER, QuietHoursOut, Run, SubscriptionOut

__all__ = [
    "CLOSED",
    "close_subscription",
    "find_subscription",
    "run_of",
    "subscription_out",
    "trigger_kind",
]

#: Why a run was cancelled, or a reply to one refused: its subscription was closed.
CLOSED = "subscription closed"


def close_subscription(
    conn: sqlite3.Connection, conversation_id: str, key: str, now: float
) -> None:
    """Close a subscription and cancel its pending (unacknowledged) runs."""
    conn.execute(
        "UPDATE proactive_subscriptions SET status = 'closed', updated_at = ?"
        " WHERE conversation_id = ? AND key = ?",
        (now, conversation_id, key),
    )
    pending = [
        r["event_id"]
        for r in conn.execute(
            "SELECT r.event_id FROM proactive_runs r JOIN events e ON e.id = r.event_id"
            " WHERE r.conversation_id = ? AND r.subscription_key = ? AND r.status = 'fired'"
            " AND e.acked_at IS NULL",
            (conversation_id, key),
        ).fetchall()
    ]
    for event_id in pending:
        conn.execute("UPDATE events SET acked_at = ? WHERE id = ?", (now, event_id))
        conn.execute(
            "UPDATE proactive_runs SET status = 'cancelled', gate = 'subscription_closed',"
            " reason = ? WHERE event_id = ?",
            (CLOSED, event_id),
        )


def trigger_kind(trigger: Any) -> tuple[str, str | None]:
    """The trigger's type and, for ``data.updated``, its dataset filter."""
    if isinstance(trigger, str):
        return trigger, None
    if isinstance(trigger, DataUpdatedTrigger):
        return trigger.type, trigger.dataset
    return str(trigger.type), None


def find_subscription(
    conn: sqlite3.Connection, conversation_id: str, key: str
) -> sqlite3.Row | None:
    """The subscription ``key`` of the conversation, active or closed, or ``None``."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM proactive_subscriptions WHERE conversation_id = ? AND key = ?",
        (conversation_id, key),
    ).fetchone()
    return row


def subscription_out(row: sqlite3.Row) -> SubscriptionOut:
    """A subscription as the buddy's API answers it."""
    return SubscriptionOut(
        key=row["key"],
        title=row["title"],
        reason=row["reason"],
        trigger=TRIGGER.validate_python(json.loads(row["trigger_json"])),
        quiet_hours=QuietHoursOut(
            start=row["quiet_start"], end=row["quiet_end"], timezone=row["timezone"]
        ),
        cooldown_minutes=row["cooldown_minutes"],
        daily_limit=row["daily_limit"],
        status=row["status"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def run_of(row: sqlite3.Row) -> Run:
    """A stored run."""
    return Run(
        id=row["id"],
        identity=row["identity"],
        conversation_id=row["conversation_id"],
        subscription_key=row["subscription_key"],
        trigger_type=row["trigger_type"],
        due_at=row["due_at"],
        status=row["status"],
        gate=row["gate"],
        reason=row["reason"],
        event_id=row["event_id"],
        created_at=row["created_at"],
    )
