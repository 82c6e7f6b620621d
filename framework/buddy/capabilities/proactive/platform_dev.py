"""The proactive ``/dev`` routes: the world reports an event, and what the playground
shows of an identity's runs and subscriptions (:mod:`buddy.capabilities.proactive.platform`).
"""

from __future__ import annotations

import sqlite3
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from buddy.capabilities.proactive.platform_scheduler import fire_run
from buddy.capabilities.proactive.platform_store import run_of, subscription_out
from buddy.capabilities.proactive.wire import (
    DevSubscription,
    DevSubscriptionList,
    DevTrigger,
    Run,
    RunList,
)
from buddy.errors import Reject
from buddy.platform.dev.core import admin, platform_of
from buddy.platform.dev.journal import journal_in

__all__ = ["dev_router"]

dev_router = APIRouter(prefix="/dev", tags=["dev"], dependencies=[Depends(admin)])


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
        fired = {"type": body.type, **({"dataset": body.dataset} if body.dataset else {})}
        journal_in(conn, "trigger", now, fired, identity=body.identity, member_id=body.member_id)
        return [fire_run(conn, row, now, None) for row in rows]

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
        return RunList(runs=[run_of(r) for r in rows])

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
                    **subscription_out(r).model_dump(),
                    conversation_id=r["conversation_id"],
                    member_id=r["member_id"],
                    next_run_at=r["next_run"] if r["status"] == "active" else None,
                )
                for r in rows
            ]
        )

    return await platform_of(request).store.read(fetch)
