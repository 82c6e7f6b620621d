"""The proactive ``/internal/v1/proactive`` routes: the buddy subscribes, lists and
unsubscribes (:mod:`buddy.capabilities.proactive.platform`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from buddy.capabilities.proactive.limits import SUBSCRIPTIONS_ACTIVE_MAX
from buddy.capabilities.proactive.manifest import QuietHours
from buddy.capabilities.proactive.platform_scheduler import first_run
from buddy.capabilities.proactive.platform_store import (
    close_subscription,
    find_subscription,
    subscription_out,
    trigger_kind,
)
from buddy.capabilities.proactive.wire import (
    SUBSCRIPTION_KEY_PATTERN,
    TRIGGER,
    SubscriptionList,
    SubscriptionOut,
    SubscriptionRequest,
    Unsubscribed,
    UnsubscribedAll,
    subscription_problem,
)
from buddy.errors import Reject
from buddy.platform.dev.core import ConversationRow, conversation, dumps, platform_of

__all__ = ["router"]


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
        return SubscriptionList(subscriptions=[subscription_out(r) for r in rows])

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
    trigger_type, dataset = trigger_kind(body.trigger)
    quiet = body.quiet_hours or QuietHours()
    member_id = conv.member_ids[0]

    def put(conn: sqlite3.Connection) -> SubscriptionOut:
        now = platform.clock.time()
        row = find_subscription(conn, conv.id, key)
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
        next_run = row["next_run"] if keep and row is not None else first_run(body.trigger, now)
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
        found = find_subscription(conn, conv.id, key)
        assert found is not None
        return subscription_out(found)

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
        row = find_subscription(conn, conv.id, key)
        if row is not None and row["status"] == "active":
            close_subscription(conn, conv.id, key, platform.clock.time())
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
            close_subscription(conn, conv.id, key, now)
        return UnsubscribedAll(closed=len(keys))

    return await platform.store.write(close)
