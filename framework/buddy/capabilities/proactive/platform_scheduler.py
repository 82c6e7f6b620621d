"""The proactive scheduler and its gates: :func:`tick` fires due schedules, a run passes
the gates or is skipped with a reason, and a reply to a run passes them again when it is
committed (:data:`EVENT_GATES`; :mod:`buddy.capabilities.proactive.platform`).
"""

from __future__ import annotations

import json
import math
import sqlite3
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from buddy.capabilities.proactive.limits import COOLDOWN_MAX
from buddy.capabilities.proactive.manifest import ScheduleTrigger
from buddy.capabilities.proactive.platform_store import CLOSED
from buddy.capabilities.proactive.wire import TRIGGER, Run
from buddy.platform.dev.core import ConversationRow, EventGate, Platform, emit_in, new_id

__all__ = ["EVENT_GATES", "commit_gate", "fire_run", "first_run", "record_delivery", "tick"]

# Deliveries older than the longest cooldown plus two local days decide no gate any more.
_KEEP_DELIVERIES = COOLDOWN_MAX * 60 + 2 * 86400


# ---------------------------------------------------------------- gates


def commit_gate(
    conn: sqlite3.Connection,
    identity: str,
    conversation_id: str,
    key: str,
    now: float,
    event_id: str | None = None,
) -> str | None:
    """Why a proactive reply may not be shown now, or ``None`` when the gates allow it.

    Called inside the turn-commit transaction: "subscription closed" when the subscription
    was closed (or does not exist), or when this event's run was cancelled by an
    unsubscribe — even if the subscription was enabled again since; else the firing gates
    (quiet hours, cooldown, daily limit) at ``now``.
    """
    if event_id is not None:
        run = conn.execute(
            "SELECT status FROM proactive_runs WHERE event_id = ? AND conversation_id = ?",
            (event_id, conversation_id),
        ).fetchone()
        if run is not None and run["status"] == "cancelled":
            return CLOSED
    row = conn.execute(
        "SELECT * FROM proactive_subscriptions"
        " WHERE conversation_id = ? AND key = ? AND identity = ?",
        (conversation_id, key, identity),
    ).fetchone()
    if row is None or row["status"] != "active":
        return CLOSED
    blocked = _gate(conn, row, now)
    return blocked[1] if blocked else None


def record_delivery(
    conn: sqlite3.Connection, identity: str, conversation_id: str, key: str, now: float
) -> None:
    """Count a shown proactive reply toward cooldown and daily limit.

    Called inside the turn-commit transaction after the reply was put in the transcript.
    """
    conn.execute(
        "INSERT INTO proactive_deliveries (conversation_id, subscription_key, shown_at)"
        " VALUES (?, ?, ?)",
        (conversation_id, key, now),
    )
    conn.execute(
        "DELETE FROM proactive_deliveries WHERE conversation_id = ? AND shown_at < ?",
        (conversation_id, now - _KEEP_DELIVERIES),
    )


def _refusal(
    conn: sqlite3.Connection,
    conv: ConversationRow,
    event_id: str,
    payload: dict[str, Any],
    now: float,
) -> str | None:
    key = payload.get("subscription_key", "")
    return commit_gate(conn, conv.identity, conv.id, key, now, event_id=event_id)


def _shown(
    conn: sqlite3.Connection, conv: ConversationRow, payload: dict[str, Any], now: float
) -> None:
    record_delivery(conn, conv.identity, conv.id, payload.get("subscription_key", ""), now)


#: A reply to a proactive run passes the gates again when it is committed.
EVENT_GATES = {"proactive": EventGate(_refusal, _shown)}


def _gate(conn: sqlite3.Connection, row: sqlite3.Row, now: float) -> tuple[str, str] | None:
    """``(gate, reason)`` of the first gate that stops ``row`` firing at ``now``, or ``None``."""
    zone = ZoneInfo(row["timezone"])
    local = datetime.fromtimestamp(now, zone)
    start, end = row["quiet_start"], row["quiet_end"]
    clock = f"{local:%H:%M}"
    inside = start <= clock < end if start <= end else (clock >= start or clock < end)
    if inside:
        return (
            "quiet_hours",
            f"quiet hours: it is {clock} in {row['timezone']}, within {start}–{end}",
        )
    shown = [
        r["shown_at"]
        for r in conn.execute(
            "SELECT shown_at FROM proactive_deliveries"
            " WHERE conversation_id = ? AND subscription_key = ? AND shown_at > ?",
            (row["conversation_id"], row["key"], now - _KEEP_DELIVERIES),
        ).fetchall()
    ]
    cooldown = row["cooldown_minutes"] * 60
    if shown and cooldown > 0 and now - max(shown) < cooldown:
        minutes = int((now - max(shown)) // 60)
        ago = f"{minutes} minutes ago" if minutes else "less than a minute ago"
        return (
            "cooldown",
            f"cooldown: the last proactive message of {row['key']} was shown {ago};"
            f" the cooldown is {row['cooldown_minutes']} minutes",
        )
    today = local.date()
    count = sum(1 for t in shown if t <= now and datetime.fromtimestamp(t, zone).date() == today)
    if count >= row["daily_limit"]:
        return (
            "daily_limit",
            f"daily limit: {count} proactive messages of {row['key']} were shown on {today}"
            f" in {row['timezone']}; the limit is {row['daily_limit']}",
        )
    return None


# ---------------------------------------------------------------- firing


async def tick(platform: Platform) -> None:
    """Fire every due schedule trigger (called periodically and when the clock moves).

    A due subscription fires once however many intervals were missed, then waits for
    the next point of its fixed grid ``at + k * interval_minutes``; a one-time schedule
    fires once. Checking and rescheduling happen in one transaction, so concurrent ticks
    never fire a run twice.
    """

    def fire(conn: sqlite3.Connection) -> set[str]:
        now = platform.clock.time()
        rows = conn.execute(
            "SELECT * FROM proactive_subscriptions"
            " WHERE status = 'active' AND next_run IS NOT NULL AND next_run <= ?"
            " ORDER BY next_run, conversation_id, key",
            (now,),
        ).fetchall()
        notify: set[str] = set()
        for row in rows:
            trigger = TRIGGER.validate_python(json.loads(row["trigger_json"]))
            conn.execute(
                "UPDATE proactive_subscriptions SET next_run = ? WHERE conversation_id = ? AND key = ?",
                (_next_run(trigger, now), row["conversation_id"], row["key"]),
            )
            if fire_run(conn, row, now, row["next_run"]).event_id is not None:
                notify.add(row["identity"])
        return notify

    for identity in await platform.store.write(fire):
        platform.notify(identity)


def fire_run(conn: sqlite3.Connection, row: sqlite3.Row, now: float, due: float | None) -> Run:
    """Fire ``row`` now: pass the gates and emit its event, or record why not."""
    blocked = _gate(conn, row, now)
    event_id = None
    if blocked is None:
        payload = {
            "subscription_key": row["key"],
            "title": row["title"],
            "reason": row["reason"],
            "trigger": json.loads(row["trigger_json"]),
            "fired_at": now,
        }
        event_id = emit_in(conn, row["identity"], "proactive", row["conversation_id"], payload, now)
    run = Run(
        id=new_id("run"),
        identity=row["identity"],
        conversation_id=row["conversation_id"],
        subscription_key=row["key"],
        trigger_type=row["trigger_type"],
        due_at=due,
        status="skipped" if blocked else "fired",
        gate=blocked[0] if blocked else None,
        reason=blocked[1] if blocked else "",
        event_id=event_id,
        created_at=now,
    )
    conn.execute(
        "INSERT INTO proactive_runs (id, identity, conversation_id, subscription_key,"
        " trigger_type, due_at, status, gate, reason, event_id, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run.id,
            run.identity,
            run.conversation_id,
            run.subscription_key,
            run.trigger_type,
            run.due_at,
            run.status,
            run.gate,
            run.reason,
            run.event_id,
            run.created_at,
        ),
    )
    return run


def first_run(trigger: Any, now: float) -> float | None:
    """When a (re)scheduled trigger fires first: ``at`` if it is still ahead, else the next
    grid point after ``now`` (a one-time schedule in the past never fires)."""
    if not isinstance(trigger, ScheduleTrigger):
        return None
    at = trigger.at.timestamp()
    return at if at >= now else _next_run(trigger, now)


def _next_run(trigger: Any, now: float) -> float | None:
    """The first point of ``at + k * interval`` strictly after ``now``, if it repeats."""
    if not isinstance(trigger, ScheduleTrigger) or trigger.interval_minutes is None:
        return None
    at = trigger.at.timestamp()
    interval = trigger.interval_minutes * 60
    if at > now:
        return at
    return at + (math.floor((now - at) / interval) + 1) * interval
