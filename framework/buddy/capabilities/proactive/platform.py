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
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from buddy.capabilities.proactive.limits import COOLDOWN_MAX, SUBSCRIPTIONS_ACTIVE_MAX
from buddy.capabilities.proactive.manifest import DataUpdatedTrigger, QuietHours, ScheduleTrigger
from buddy.capabilities.proactive.wire import (
    SUBSCRIPTION_KEY_PATTERN,
    TRIGGER,
    DevSubscription,
    DevSubscriptionList,
    DevTrigger,
    QuietHoursOut,
    Run,
    RunList,
    SubscriptionList,
    SubscriptionOut,
    SubscriptionRequest,
    Unsubscribed,
    UnsubscribedAll,
    subscription_problem,
)
from buddy.errors import Reject
from buddy.platform.dev.core import (
    ConversationRow,
    EventGate,
    Platform,
    admin,
    conversation,
    dumps,
    emit_in,
    new_id,
    platform_of,
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

CLOSED = "subscription closed"
# Deliveries older than the longest cooldown plus two local days decide no gate any more.
_KEEP_DELIVERIES = COOLDOWN_MAX * 60 + 2 * 86400


class _SubscriptionRoute(APIRoute):
    """A route whose invalid body or key answers ``400 subscription_invalid``.

    Header errors (e.g. a missing ``X-Conversation-Id``) stay ``400 invalid_request``.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def run(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                errors = list(exc.errors())
                if errors and all(tuple(e["loc"])[:1] in (("body",), ("path",)) for e in errors):
                    raise Reject(400, "subscription_invalid", subscription_problem(errors)) from exc
                raise

        return run


router = APIRouter(
    prefix="/internal/v1/proactive", tags=["proactive"], route_class=_SubscriptionRoute
)
dev_router = APIRouter(prefix="/dev", tags=["dev"], dependencies=[Depends(admin)])

Conv = Annotated[ConversationRow, Depends(conversation)]
Key = Annotated[
    str,
    Path(
        pattern=SUBSCRIPTION_KEY_PATTERN,
        description="1–64 of a–z 0–9 . _ -, starting with a letter or digit.",
    ),
]
AnyKey = Annotated[str, Path(description="The subscription's key (an unknown one is not found).")]


# ---------------------------------------------------------------- buddy API


@router.get("/subscriptions", response_model=SubscriptionList)
async def list_subscriptions(request: Request, conv: Conv) -> SubscriptionList:
    """Every subscription of this conversation, closed ones included, sorted by key."""

    def fetch(conn: sqlite3.Connection) -> SubscriptionList:
        rows = conn.execute(
            "SELECT * FROM proactive_subscriptions WHERE conversation_id = ? ORDER BY key",
            (conv.id,),
        ).fetchall()
        return SubscriptionList(subscriptions=[_out(r) for r in rows])

    return await platform_of(request).store.read(fetch)


@router.put("/subscriptions/{key:path}", response_model=SubscriptionOut)
async def subscribe(
    request: Request, conv: Conv, key: Key, body: SubscriptionRequest
) -> SubscriptionOut:
    """Create the subscription ``key``, or update it and re-enable it if it was closed.

    Private conversations only (400 ``proactive_private_only``). Invalid fields answer 400
    ``subscription_invalid``; making one active beyond the user's limit of active
    subscriptions for this identity answers 409 ``subscriptions_limit``. Updating an active
    subscription with the same trigger keeps its schedule; a new trigger or a re-enabled
    subscription is scheduled afresh (an ``at`` in the past fires at the next interval, or
    never for a one-time schedule).
    """
    if not conv.private:
        raise Reject(
            400,
            "proactive_private_only",
            "proactive subscriptions are for private conversations only; this one is a group",
        )
    platform = platform_of(request)
    trigger = TRIGGER.dump_python(body.trigger, mode="json")
    trigger_json = dumps(trigger)
    trigger_type, dataset = _trigger_kind(body.trigger)
    quiet = body.quiet_hours or QuietHours()
    member_id = conv.member_ids[0]

    def put(conn: sqlite3.Connection) -> SubscriptionOut:
        now = platform.clock.time()
        row = _find(conn, conv.id, key)
        if row is None or row["status"] == "closed":
            active = conn.execute(
                "SELECT COUNT(*) FROM proactive_subscriptions"
                " WHERE identity = ? AND member_id = ? AND status = 'active'",
                (conv.identity, member_id),
            ).fetchone()[0]
            if active >= SUBSCRIPTIONS_ACTIVE_MAX:
                raise Reject(
                    409,
                    "subscriptions_limit",
                    f"this user already has {active} active subscriptions with this buddy; the"
                    f" limit is {SUBSCRIPTIONS_ACTIVE_MAX} (close one first)",
                )
        keep = row is not None and row["status"] == "active" and row["trigger_json"] == trigger_json
        next_run = row["next_run"] if keep and row is not None else _first_run(body.trigger, now)
        values = (
            body.title,
            body.reason,
            trigger_json,
            trigger_type,
            dataset,
            quiet.start,
            quiet.end,
            quiet.timezone,
            body.cooldown_minutes,
            body.daily_limit,
            next_run,
            now,
        )
        if row is None:
            conn.execute(
                "INSERT INTO proactive_subscriptions (title, reason, trigger_json, trigger_type,"
                " dataset, quiet_start, quiet_end, timezone, cooldown_minutes, daily_limit,"
                " next_run, updated_at, created_at, conversation_id, key, identity, member_id,"
                " status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active')",
                (*values, now, conv.id, key, conv.identity, member_id),
            )
        else:
            conn.execute(
                "UPDATE proactive_subscriptions SET title = ?, reason = ?, trigger_json = ?,"
                " trigger_type = ?, dataset = ?, quiet_start = ?, quiet_end = ?, timezone = ?,"
                " cooldown_minutes = ?, daily_limit = ?, next_run = ?, updated_at = ?,"
                " status = 'active' WHERE conversation_id = ? AND key = ?",
                (*values, conv.id, key),
            )
        found = _find(conn, conv.id, key)
        assert found is not None
        return _out(found)

    return await platform.store.write(put)


@router.delete("/subscriptions/{key:path}", response_model=Unsubscribed)
async def unsubscribe(request: Request, conv: Conv, key: AnyKey) -> Unsubscribed:
    """Close the subscription ``key``; ``found`` says whether it exists (active or closed).

    Its pending runs are cancelled: unacknowledged ``proactive`` events of it are marked
    acknowledged (not delivered again), and committing a reply to one is skipped with the
    reason "subscription closed".
    """
    platform = platform_of(request)

    def close(conn: sqlite3.Connection) -> Unsubscribed:
        row = _find(conn, conv.id, key)
        if row is not None and row["status"] == "active":
            _close(conn, conv.id, key, platform.clock.time())
        return Unsubscribed(found=row is not None)

    return await platform.store.write(close)


@router.delete("/subscriptions", response_model=UnsubscribedAll)
async def unsubscribe_all(request: Request, conv: Conv) -> UnsubscribedAll:
    """Close every active subscription of this conversation (cancelling their pending
    runs); ``closed`` is how many were active."""
    platform = platform_of(request)

    def close(conn: sqlite3.Connection) -> UnsubscribedAll:
        now = platform.clock.time()
        keys = [
            r["key"]
            for r in conn.execute(
                "SELECT key FROM proactive_subscriptions"
                " WHERE conversation_id = ? AND status = 'active' ORDER BY key",
                (conv.id,),
            ).fetchall()
        ]
        for key in keys:
            _close(conn, conv.id, key, now)
        return UnsubscribedAll(closed=len(keys))

    return await platform.store.write(close)


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
            if _run(conn, row, now, row["next_run"]).event_id is not None:
                notify.add(row["identity"])
        return notify

    for identity in await platform.store.write(fire):
        platform.notify(identity)


def _run(conn: sqlite3.Connection, row: sqlite3.Row, now: float, due: float | None) -> Run:
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


def _close(conn: sqlite3.Connection, conversation_id: str, key: str, now: float) -> None:
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


def _trigger_kind(trigger: Any) -> tuple[str, str | None]:
    """The trigger's type and, for ``data.updated``, its dataset filter."""
    if isinstance(trigger, str):
        return trigger, None
    if isinstance(trigger, DataUpdatedTrigger):
        return trigger.type, trigger.dataset
    return str(trigger.type), None


def _first_run(trigger: Any, now: float) -> float | None:
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


def _find(conn: sqlite3.Connection, conversation_id: str, key: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM proactive_subscriptions WHERE conversation_id = ? AND key = ?",
        (conversation_id, key),
    ).fetchone()
    return row


def _out(row: sqlite3.Row) -> SubscriptionOut:
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


def _run_of(row: sqlite3.Row) -> Run:
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


# ---------------------------------------------------------------- dev endpoints


@dev_router.post("/triggers", response_model=RunList)
async def fire_trigger(request: Request, body: DevTrigger) -> RunList:
    """The world reports an event for a user: fire every matching active subscription in
    that identity's private conversations with that member.

    ``data.updated`` with a dataset matches subscriptions for that dataset and those
    without one; without a dataset only the latter. Answers the runs (fired or skipped);
    404 ``buddy_not_found`` for an unknown identity.
    """
    platform = platform_of(request)

    def fire(conn: sqlite3.Connection) -> list[Run]:
        now = platform.clock.time()
        buddy_id = body.identity.removesuffix("-dev")
        if not conn.execute("SELECT 1 FROM buddies WHERE buddy_id = ?", (buddy_id,)).fetchone():
            raise Reject(404, "buddy_not_found", f"no buddy for identity {body.identity}")
        rows = conn.execute(
            "SELECT * FROM proactive_subscriptions WHERE identity = ? AND member_id = ?"
            " AND status = 'active' AND trigger_type = ?"
            " AND (dataset IS NULL OR dataset = ?) ORDER BY conversation_id, key",
            (body.identity, body.member_id, body.type, body.dataset),
        ).fetchall()
        return [_run(conn, row, now, None) for row in rows]

    runs = await platform.store.write(fire)
    if any(r.event_id for r in runs):
        platform.notify(body.identity)
    return RunList(runs=runs)


@dev_router.get("/proactive/runs", response_model=RunList)
async def list_runs(
    request: Request,
    identity_name: Annotated[str, Query(alias="identity")],
    conversation_id: Annotated[str | None, Query(description="Only this conversation.")] = None,
) -> RunList:
    """Every run of an identity's subscriptions (fired, skipped with the gate's reason, or
    cancelled), oldest first."""

    def fetch(conn: sqlite3.Connection) -> RunList:
        rows = conn.execute(
            "SELECT * FROM proactive_runs WHERE identity = ?"
            " AND (? IS NULL OR conversation_id = ?) ORDER BY seq",
            (identity_name, conversation_id, conversation_id),
        ).fetchall()
        return RunList(runs=[_run_of(r) for r in rows])

    return await platform_of(request).store.read(fetch)


@dev_router.get("/proactive/subscriptions", response_model=DevSubscriptionList)
async def dev_subscriptions(
    request: Request, identity_name: Annotated[str, Query(alias="identity")]
) -> DevSubscriptionList:
    """Every subscription of an identity, with its conversation, member and next run."""

    def fetch(conn: sqlite3.Connection) -> DevSubscriptionList:
        rows = conn.execute(
            "SELECT * FROM proactive_subscriptions WHERE identity = ?"
            " ORDER BY conversation_id, key",
            (identity_name,),
        ).fetchall()
        return DevSubscriptionList(
            subscriptions=[
                DevSubscription(
                    **_out(r).model_dump(),
                    conversation_id=r["conversation_id"],
                    member_id=r["member_id"],
                    next_run_at=r["next_run"] if r["status"] == "active" else None,
                )
                for r in rows
            ]
        )

    return await platform_of(request).store.read(fetch)


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
