"""The data capability's ``/dev`` routes, the user's side: grant or revoke, turn a dataset
off in a group, answer consent cards, and override a member's (otherwise simulated) data
(:mod:`buddy.capabilities.data.platform`).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import AfterValidator

from buddy.capabilities.data import simulate
from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.capabilities.data.limits import ONE_TIME_RESULT_SECONDS
from buddy.capabilities.data.platform_api import RequestId
from buddy.capabilities.data.platform_store import (
    check_identity,
    check_member,
    declared_versions,
    erase_expired,
    grant_states,
    items_of,
)
from buddy.capabilities.data.wire import (
    ConsentAnswer,
    ConsentAnswered,
    DevDataOverride,
    GrantChange,
    GrantState,
    GroupSetting,
    MemberData,
    dataset_refusal,
)
from buddy.errors import Reject
from buddy.platform.dev.core import admin, dumps, emit_in, platform_of
from buddy.platform.dev.journal import journal_in
from buddy.platform.protocol.conversation import refused

__all__ = ["dev_router"]

dev_router = APIRouter(prefix="/dev", tags=["dev"], dependencies=[Depends(admin)])


@dev_router.put("/grants", response_model=GrantState)
async def put_grant(request: Request, body: GrantChange) -> GrantState:
    """A user grants a dataset at its current declared version, or revokes it.

    Granting needs the dataset in the identity's declaration (400
    ``dataset_not_declared``); revoking always works.
    """
    platform = platform_of(request)
    now = platform.clock.time()

    def change(conn: sqlite3.Connection) -> GrantState:
        check_identity(conn, body.identity)
        check_member(conn, body.member_id)
        if body.granted:
            version = declared_versions(conn, body.identity).get(body.dataset)
            if version is None:
                raise Reject(
                    400,
                    "dataset_not_declared",
                    f"{body.identity} has not declared {body.dataset}; only declared datasets can be granted",
                )
            conn.execute(
                "INSERT INTO data_grants (identity, member_id, dataset, version, granted_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (identity, member_id, dataset) DO UPDATE"
                " SET version = excluded.version, granted_at = excluded.granted_at",
                (body.identity, body.member_id, body.dataset, version, now),
            )
        else:
            conn.execute(
                "DELETE FROM data_grants WHERE identity = ? AND member_id = ? AND dataset = ?",
                (body.identity, body.member_id, body.dataset),
            )
        journal_in(
            conn,
            "grant" if body.granted else "revoke",
            now,
            {"dataset": body.dataset},
            identity=body.identity,
            member_id=body.member_id,
        )
        (state,) = grant_states(conn, body.identity, body.member_id, [body.dataset])
        return state

    return await platform.store.write(change)


@dev_router.get("/grants", response_model=list[GrantState])
async def list_grants(
    request: Request,
    identity_name: Annotated[str, Query(alias="identity", min_length=1, max_length=80)],
    member_id: Annotated[str, Query(min_length=1, max_length=64)],
) -> list[GrantState]:
    """A member's grants to an identity, one entry per catalogue dataset (for the playground)."""

    def fetch(conn: sqlite3.Connection) -> list[GrantState]:
        check_identity(conn, identity_name)
        check_member(conn, member_id)
        return grant_states(conn, identity_name, member_id, list(DATA_ACCESS_CAPABILITIES))

    return await platform_of(request).store.read(fetch)


@dev_router.put("/group-settings", response_model=GroupSetting)
async def put_group_setting(request: Request, body: GroupSetting) -> GroupSetting:
    """A member turns a dataset off in one group (queries there answer ``disabledInGroup``)
    or on again (``400 group_only`` for a private chat, ``400 member_not_in_conversation``
    for someone not in the group)."""

    def change(conn: sqlite3.Connection) -> None:
        row = conn.execute(
            "SELECT kind FROM conversations WHERE id = ?", (body.conversation_id,)
        ).fetchone()
        if row is None:
            raise Reject(404, "conversation_not_found", f"no conversation {body.conversation_id}")
        if row["kind"] != "group":
            raise Reject(
                400, "group_only", "group settings exist in groups; this is a private chat"
            )
        if not conn.execute(
            "SELECT 1 FROM members WHERE conversation_id = ? AND member_id = ?",
            (body.conversation_id, body.member_id),
        ).fetchone():
            raise Reject(
                400, "member_not_in_conversation", f"{body.member_id} is not a member of this group"
            )
        if body.disabled:
            conn.execute(
                "INSERT OR IGNORE INTO data_group_disabled (conversation_id, member_id, dataset)"
                " VALUES (?, ?, ?)",
                (body.conversation_id, body.member_id, body.dataset),
            )
        else:
            conn.execute(
                "DELETE FROM data_group_disabled WHERE conversation_id = ? AND member_id = ?"
                " AND dataset = ?",
                (body.conversation_id, body.member_id, body.dataset),
            )

    await platform_of(request).store.write(change)
    return body


@dev_router.post(
    "/data-access/requests/{request_id}/answer",
    response_model=ConsentAnswered,
    response_model_exclude_none=True,
)
async def answer_request(
    request: Request, request_id: RequestId, body: ConsentAnswer
) -> ConsentAnswered:
    """The user answers a consent card (once; 409 ``request_answered`` after that).

    healthkit + granted: the card's datasets still declared are granted for the chat's
    member at the current version. location/calendar + granted: a simulated one-time
    result is stored for ``ONE_TIME_RESULT_SECONDS``. Either way the card shows the answer
    and the buddy gets a ``consent_result`` event.
    """
    platform = platform_of(request)
    now = platform.clock.time()

    def answer(conn: sqlite3.Connection) -> tuple[str, ConsentAnswered]:
        erase_expired(conn, now)
        row = conn.execute(
            "SELECT r.kind, r.datasets, r.calendar_days, r.message_id, r.answered_at,"
            " r.conversation_id, c.identity FROM data_requests r"
            " JOIN conversations c ON c.id = r.conversation_id WHERE r.id = ?",
            (request_id,),
        ).fetchone()
        if row is None:
            raise Reject(404, "request_not_found", f"no data-access request {request_id}")
        if row["answered_at"] is not None:
            raise Reject(409, "request_answered", f"request {request_id} was answered already")
        (member_id,) = (
            r["member_id"]
            for r in conn.execute(
                "SELECT member_id FROM members WHERE conversation_id = ?", (row["conversation_id"],)
            ).fetchall()
        )
        kind, identity_name = row["kind"], row["identity"]
        datasets: list[str] = json.loads(row["datasets"])
        result: dict[str, Any] | None = None
        if body.granted and kind == "healthkit":
            declared = declared_versions(conn, identity_name)
            conn.executemany(
                "INSERT INTO data_grants (identity, member_id, dataset, version, granted_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (identity, member_id, dataset) DO UPDATE"
                " SET version = excluded.version, granted_at = excluded.granted_at",
                [
                    (identity_name, member_id, d, declared[d], now)
                    for d in datasets
                    if d in declared
                ],
            )
        elif body.granted and kind == "location":
            result = simulate.location(member_id, now)
        elif body.granted:
            result = simulate.calendar(member_id, now, row["calendar_days"])
        conn.execute(
            "UPDATE data_requests SET answered_at = ?, granted = ?, result = ?, expires_at = ?"
            " WHERE id = ?",
            (
                now,
                int(body.granted),
                None if result is None else dumps(result),
                now + ONE_TIME_RESULT_SECONDS if result is not None else None,
                request_id,
            ),
        )
        card = conn.execute("SELECT body FROM messages WHERE id = ?", (row["message_id"],))
        shown = json.loads(card.fetchone()["body"])
        shown["status"] = "granted" if body.granted else "denied"
        conn.execute("UPDATE messages SET body = ? WHERE id = ?", (dumps(shown), row["message_id"]))
        payload: dict[str, Any] = {"request_id": request_id, "kind": kind, "granted": body.granted}
        if kind == "healthkit":
            payload["datasets"] = datasets
        event_id = emit_in(
            conn, identity_name, "consent_result", row["conversation_id"], payload, now
        )
        return identity_name, ConsentAnswered(
            request_id=request_id,
            kind=kind,
            granted=body.granted,
            datasets=datasets if kind == "healthkit" else None,
            event_id=event_id,
        )

    identity_name, answered = await platform.store.write(answer)
    platform.notify(identity_name)
    return answered


@dev_router.put("/data", response_model=MemberData)
async def put_data(request: Request, body: DevDataOverride) -> MemberData:
    """Override a member's data of one dataset (``items: null`` = no data → ``unavailable``).

    Item fields must be the catalogue's item fields of that dataset (the model checks
    them: ``400 item_field_unknown``).
    """
    platform = platform_of(request)
    now = platform.clock.time()

    def put(conn: sqlite3.Connection) -> None:
        check_member(conn, body.member_id)
        conn.execute(
            "INSERT INTO data_overrides (member_id, dataset, items, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (member_id, dataset) DO UPDATE SET items = excluded.items,"
            " updated_at = excluded.updated_at",
            (body.member_id, body.dataset, None if body.items is None else dumps(body.items), now),
        )
        journal_in(
            conn,
            "data",
            now,
            {"dataset": body.dataset, "items": body.items},
            member_id=body.member_id,
        )

    await platform.store.write(put)
    return MemberData(
        member_id=body.member_id, dataset=body.dataset, source="override", items=body.items
    )


def _known(dataset: str) -> str:
    refusal = dataset_refusal(dataset)
    if refusal is not None:
        raise refused(refusal)
    return dataset


MemberParam = Annotated[str, Query(min_length=1, max_length=64)]
DatasetParam = Annotated[
    str,
    Query(
        min_length=1,
        max_length=64,
        description="A catalogue dataset id (`400 dataset_unknown`).",
        json_schema_extra={"enum": list(DATA_ACCESS_CAPABILITIES)},
    ),
    AfterValidator(_known),
]


async def _member_data(request: Request, member_id: str, dataset: str, reset: bool) -> MemberData:
    platform = platform_of(request)
    now = platform.clock.time()

    def fetch(conn: sqlite3.Connection) -> MemberData:
        check_member(conn, member_id)
        if reset:
            conn.execute(
                "DELETE FROM data_overrides WHERE member_id = ? AND dataset = ?",
                (member_id, dataset),
            )
            journal_in(conn, "data_reset", now, {"dataset": dataset}, member_id=member_id)
        source, items = items_of(conn, member_id, dataset, now)
        return MemberData(member_id=member_id, dataset=dataset, source=source, items=items)

    return await platform.store.write(fetch)


@dev_router.get("/data", response_model=MemberData)
async def get_data(request: Request, member_id: MemberParam, dataset: DatasetParam) -> MemberData:
    """A member's data of one dataset as a granted query would see it now."""
    return await _member_data(request, member_id, dataset, reset=False)


@dev_router.delete("/data", response_model=MemberData)
async def reset_data(request: Request, member_id: MemberParam, dataset: DatasetParam) -> MemberData:
    """Drop a member's override of one dataset: the simulated data shows again."""
    return await _member_data(request, member_id, dataset, reset=True)
