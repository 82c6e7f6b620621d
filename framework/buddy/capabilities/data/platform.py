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
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from buddy.capabilities.data import simulate
from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.capabilities.data.limits import (
    CALENDAR_DAYS_DEFAULT,
    ONE_TIME_RESULT_SECONDS,
    QUERY_RESPONSE_BYTES,
)
from buddy.capabilities.data.wire import (
    ConsentAnswer,
    ConsentAnswered,
    ConsentRequest,
    ConsentRequested,
    DataQuery,
    DatasetStatus,
    Declaration,
    DeclarationAccepted,
    DeclaredRequirement,
    DevDataOverride,
    GrantChange,
    GrantState,
    GroupSetting,
    MemberData,
    OneTimeResult,
    QueryAnswer,
    grant_version,
)
from buddy.errors import Reject
from buddy.platform.dev.core import (
    ConversationRow,
    Identity,
    admin,
    conversation,
    dumps,
    emit_in,
    identity,
    new_id,
    platform_of,
)

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


class _DeclarationRoute(APIRoute):
    """A route whose body errors answer ``declaration_invalid`` (the seed's one code)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                raise Reject(400, "declaration_invalid", _explain(exc)) from exc

        return handle


def _explain(exc: RequestValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "the declaration is invalid"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    message = str(first.get("msg", "invalid"))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {message}{more}" if where else f"{message}{more}"


router = APIRouter(prefix="/internal/v1/data-access", tags=["data"])
dev_router = APIRouter(prefix="/dev", tags=["dev"], dependencies=[Depends(admin)])

Conv = Annotated[ConversationRow, Depends(conversation)]
Who = Annotated[Identity, Depends(identity)]
RequestId = Annotated[str, Path(min_length=1, max_length=64)]


# ---------------------------------------------------------------- shared checks


def _check_known(datasets: list[str]) -> None:
    """400 ``dataset_unknown`` for an id outside the catalogue."""
    for dataset in datasets:
        if dataset not in DATA_ACCESS_CAPABILITIES:
            known = ", ".join(DATA_ACCESS_CAPABILITIES)
            raise Reject(
                400, "dataset_unknown", f"{dataset} is not a dataset of the catalogue ({known})"
            )


def _check_unique(datasets: list[str]) -> None:
    """400 ``dataset_duplicate`` for an id listed twice."""
    seen: set[str] = set()
    for dataset in datasets:
        if dataset in seen:
            raise Reject(400, "dataset_duplicate", f"{dataset} is listed twice")
        seen.add(dataset)


def _member_of(conv: ConversationRow, member_id: str | None) -> str:
    """Whose data a conversation-scoped call is about (seed: member_id rules)."""
    if conv.private:
        (sole,) = conv.member_ids
        if member_id is None or member_id == sole:
            return sole
        raise Reject(
            400,
            "member_not_in_conversation",
            f"{member_id} is not the member of this private chat; leave member_id out",
        )
    if member_id is None:
        raise Reject(
            400, "member_required", "in a group, member_id is required: say whose data to read"
        )
    if member_id not in conv.member_ids:
        raise Reject(
            400, "member_not_in_conversation", f"{member_id} is not a member of this group"
        )
    return member_id


def _declared_versions(conn: sqlite3.Connection, identity_name: str) -> dict[str, str]:
    rows = conn.execute(
        "SELECT dataset, version FROM data_declarations WHERE identity = ?", (identity_name,)
    ).fetchall()
    return {r["dataset"]: r["version"] for r in rows}


def _items_of(
    conn: sqlite3.Connection, member_id: str, dataset: str, now: float
) -> tuple[Literal["simulated", "override"], list[dict[str, Any]] | None]:
    """A member's data of one dataset now: its override, else the simulation."""
    row = conn.execute(
        "SELECT items FROM data_overrides WHERE member_id = ? AND dataset = ?",
        (member_id, dataset),
    ).fetchone()
    if row is None:
        return "simulated", simulate.simulate(member_id, dataset, now)
    items: list[dict[str, Any]] | None = None if row["items"] is None else json.loads(row["items"])
    return "override", items


def _json_bytes(value: Any) -> bytes:
    """JSON exactly as it goes on the wire (the same encoding as FastAPI's responses)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


# ---------------------------------------------------------------- buddy API


async def put_declaration(request: Request, who: Who, body: Declaration) -> DeclarationAccepted:
    """Replace the identity's whole declaration (an empty list clears it).

    Each requirement's grant version is ``sha256(id|purpose|schema_version)[:16]``; grants
    made at another version answer ``notGranted`` until the user consents again. Any
    invalid input (more than 32 requirements, an id outside the catalogue, a purpose
    outside 1–200 characters, a duplicate id, an extra field) answers 400
    ``declaration_invalid``.
    """
    seen: set[str] = set()
    for index, requirement in enumerate(body.requirements):
        if requirement.id in seen:
            raise Reject(
                400,
                "declaration_invalid",
                f"requirements.{index}.id: {requirement.id} is declared twice (duplicates are not allowed)",
            )
        seen.add(requirement.id)
    platform = platform_of(request)
    now = platform.clock.time()
    stored: list[DeclaredRequirement] = []
    rows: list[tuple[Any, ...]] = []
    for position, requirement in enumerate(body.requirements):
        entry = DATA_ACCESS_CAPABILITIES[requirement.id]
        schema_version = requirement.schema_version or entry.schema_version
        version = grant_version(requirement.id, requirement.purpose, schema_version)
        stored.append(
            DeclaredRequirement(id=requirement.id, purpose=requirement.purpose, version=version)
        )
        rows.append(
            (
                who.name,
                requirement.id,
                position,
                requirement.purpose,
                requirement.title or entry.title,
                requirement.source or entry.source,
                schema_version,
                version,
                now,
            )
        )

    def replace(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM data_declarations WHERE identity = ?", (who.name,))
        conn.executemany(
            "INSERT INTO data_declarations (identity, dataset, position, purpose, title, source,"
            " schema_version, version, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )

    await platform.store.write(replace)
    return DeclarationAccepted(requirements=stored)


router.add_api_route(
    "/declaration",
    put_declaration,
    methods=["PUT"],
    response_model=DeclarationAccepted,
    route_class_override=_DeclarationRoute,
)


@router.get("/declaration", response_model=DeclarationAccepted)
async def get_declaration(request: Request, who: Who) -> DeclarationAccepted:
    """The identity's current declaration, in the order uploaded."""

    def fetch(conn: sqlite3.Connection) -> DeclarationAccepted:
        rows = conn.execute(
            "SELECT dataset, purpose, version FROM data_declarations WHERE identity = ?"
            " ORDER BY position",
            (who.name,),
        ).fetchall()
        return DeclarationAccepted(
            requirements=[
                DeclaredRequirement(id=r["dataset"], purpose=r["purpose"], version=r["version"])
                for r in rows
            ]
        )

    return await platform_of(request).store.read(fetch)


@router.post("/query", response_model=QueryAnswer)
async def query(request: Request, conv: Conv, body: DataQuery) -> Response:
    """One status per dataset, in the order asked; only ``available`` carries ``data``.

    Statuses, first match wins: ``notDeclared`` (not in the current declaration),
    ``disabledInGroup`` (a group where that member turned it off), ``notGranted`` (no
    grant, revoked, or granted at another version), ``unavailable`` (granted, no data),
    ``available``. A dataset listed twice is answered twice. In a group ``member_id`` is
    required and must be a member; in a private chat it is absent or the sole member. A
    response over 512 KiB answers 413.
    """
    _check_known(body.datasets)
    member_id = _member_of(conv, body.member_id)
    platform = platform_of(request)
    now = platform.clock.time()

    def answer(conn: sqlite3.Connection) -> list[dict[str, Any]]:
        declared = _declared_versions(conn, conv.identity)
        granted = {
            r["dataset"]: r["version"]
            for r in conn.execute(
                "SELECT dataset, version FROM data_grants WHERE identity = ? AND member_id = ?",
                (conv.identity, member_id),
            ).fetchall()
        }
        disabled = {
            r["dataset"]
            for r in conn.execute(
                "SELECT dataset FROM data_group_disabled WHERE conversation_id = ? AND member_id = ?",
                (conv.id, member_id),
            ).fetchall()
        }
        results: list[dict[str, Any]] = []
        for dataset in body.datasets:
            status: DatasetStatus
            items: list[dict[str, Any]] | None = None
            if dataset not in declared:
                status = "notDeclared"
            elif not conv.private and dataset in disabled:
                status = "disabledInGroup"
            elif granted.get(dataset) != declared[dataset]:
                status = "notGranted"
            else:
                _, items = _items_of(conn, member_id, dataset, now)
                status = "unavailable" if items is None else "available"
            result: dict[str, Any] = {"dataset": dataset, "status": status}
            if items is not None:
                result["data"] = {"items": items}
            results.append(result)
        return results

    content = _json_bytes({"results": await platform.store.read(answer)})
    if len(content) > QUERY_RESPONSE_BYTES:
        raise Reject(
            413,
            "response_too_large",
            f"the response would be {len(content)} bytes; the limit is {QUERY_RESPONSE_BYTES}"
            " (512 KiB): query fewer datasets",
        )
    return Response(content=content, media_type="application/json")


@router.post("/requests", response_model=ConsentRequested, status_code=201)
async def request_consent(
    request: Request, response: Response, conv: Conv, body: ConsentRequest
) -> ConsentRequested:
    """Put a consent card into a private chat (kind ``consent``); 201, or 200 for a repeat.

    ``healthkit`` asks for declared datasets (required); ``location`` and ``calendar`` ask
    for a one-time result (``calendar_days`` 1–31, default 7, calendar only). The same
    ``idempotency_key`` in the same conversation answers the first request again (200),
    whatever the rest of the body says.
    """
    if not conv.private:
        raise Reject(
            400,
            "consent_private_only",
            "consent cards can only be sent in a private chat; ask the member to open one",
        )
    datasets: list[str] = []
    if body.kind == "healthkit":
        if not body.datasets:
            raise Reject(400, "request_invalid", "a healthkit request needs datasets")
        _check_known(body.datasets)
        _check_unique(body.datasets)
        datasets = list(body.datasets)
    elif body.datasets is not None:
        raise Reject(
            400, "request_invalid", f"datasets are for healthkit requests, not {body.kind}"
        )
    if body.calendar_days is not None and body.kind != "calendar":
        raise Reject(
            400, "request_invalid", f"calendar_days is for calendar requests, not {body.kind}"
        )
    days = (body.calendar_days or CALENDAR_DAYS_DEFAULT) if body.kind == "calendar" else None
    platform = platform_of(request)
    now = platform.clock.time()

    def create(conn: sqlite3.Connection) -> tuple[ConsentRequested, bool]:
        _erase_expired(conn, now)
        found = conn.execute(
            "SELECT id, message_id FROM data_requests WHERE conversation_id = ?"
            " AND idempotency_key = ?",
            (conv.id, body.idempotency_key),
        ).fetchone()
        if found is not None:
            return ConsentRequested(request_id=found["id"], message_id=found["message_id"]), False
        card: dict[str, Any] = {"kind": body.kind, "reason": body.reason}
        if body.kind == "healthkit":
            rows = {
                r["dataset"]: r
                for r in conn.execute(
                    "SELECT dataset, title, purpose FROM data_declarations WHERE identity = ?",
                    (conv.identity,),
                ).fetchall()
            }
            missing = [d for d in datasets if d not in rows]
            if missing:
                raise Reject(
                    400,
                    "dataset_not_declared",
                    f"{', '.join(missing)} not in the declaration; declare a dataset before asking for it",
                )
            card["datasets"] = [
                {"id": d, "title": rows[d]["title"], "purpose": rows[d]["purpose"]}
                for d in datasets
            ]
        if days is not None:
            card["calendar_days"] = days
        request_id, message_id = new_id("dar"), new_id("msg")
        conn.execute(
            "INSERT INTO messages (id, conversation_id, sender, member_id, kind, body, created_at)"
            " VALUES (?, ?, 'buddy', NULL, 'consent', ?, ?)",
            (
                message_id,
                conv.id,
                dumps({"request_id": request_id, **card, "status": "pending"}),
                now,
            ),
        )
        conn.execute(
            "INSERT INTO data_requests (id, conversation_id, idempotency_key, kind, reason,"
            " datasets, calendar_days, message_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                request_id,
                conv.id,
                body.idempotency_key,
                body.kind,
                body.reason,
                dumps(datasets),
                days,
                message_id,
                now,
            ),
        )
        return ConsentRequested(request_id=request_id, message_id=message_id), True

    created, fresh = await platform.store.write(create)
    response.status_code = 201 if fresh else 200
    return created


@router.get("/results/{request_id}", response_model=OneTimeResult, response_model_exclude_none=True)
async def read_result(request: Request, conv: Conv, request_id: RequestId) -> OneTimeResult:
    """A one-time location or calendar result: ``available`` with ``data``, or ``unavailable``.

    Unavailable when the card is not answered, was denied, is a healthkit card (query the
    datasets instead), or the result expired (it is kept for ``ONE_TIME_RESULT_SECONDS``
    of platform time after the answer, then erased). 404 for an id not of this
    conversation.
    """
    platform = platform_of(request)
    now = platform.clock.time()

    def read(conn: sqlite3.Connection) -> OneTimeResult | None:
        _erase_expired(conn, now)
        row = conn.execute(
            "SELECT result FROM data_requests WHERE id = ? AND conversation_id = ?",
            (request_id, conv.id),
        ).fetchone()
        if row is None:
            return None
        if row["result"] is None:
            return OneTimeResult(status="unavailable")
        return OneTimeResult(status="available", data=json.loads(row["result"]))

    found = await platform.store.write(read)
    if found is None:
        raise Reject(404, "request_not_found", f"no data-access request {request_id} here")
    return found


def _erase_expired(conn: sqlite3.Connection, now: float) -> None:
    """One-time results are erased once expired: the platform keeps no stale user data."""
    conn.execute(
        "UPDATE data_requests SET result = NULL WHERE result IS NOT NULL AND expires_at < ?",
        (now,),
    )


# ---------------------------------------------------------------- dev: the user's side


def _check_identity(conn: sqlite3.Connection, identity_name: str) -> None:
    buddy_id = identity_name.removesuffix("-dev")
    if not conn.execute("SELECT 1 FROM buddies WHERE buddy_id = ?", (buddy_id,)).fetchone():
        raise Reject(404, "buddy_not_found", f"no buddy for identity {identity_name}")


def _check_member(conn: sqlite3.Connection, member_id: str) -> None:
    if not conn.execute("SELECT 1 FROM users WHERE member_id = ?", (member_id,)).fetchone():
        raise Reject(404, "member_not_found", f"no member {member_id}")


def _grant_states(
    conn: sqlite3.Connection, identity_name: str, member_id: str, datasets: list[str]
) -> list[GrantState]:
    declared = {
        r["dataset"]: r
        for r in conn.execute(
            "SELECT dataset, purpose, version FROM data_declarations WHERE identity = ?",
            (identity_name,),
        ).fetchall()
    }
    grants = {
        r["dataset"]: r["version"]
        for r in conn.execute(
            "SELECT dataset, version FROM data_grants WHERE identity = ? AND member_id = ?",
            (identity_name, member_id),
        ).fetchall()
    }
    states = []
    for dataset in datasets:
        row = declared.get(dataset)
        version = row["version"] if row else None
        states.append(
            GrantState(
                identity=identity_name,
                member_id=member_id,
                dataset=dataset,
                declared=row is not None,
                purpose=row["purpose"] if row else None,
                version=version,
                granted_version=grants.get(dataset),
                granted=version is not None and grants.get(dataset) == version,
            )
        )
    return states


@dev_router.put("/grants", response_model=GrantState)
async def put_grant(request: Request, body: GrantChange) -> GrantState:
    """A user grants a dataset at its current declared version, or revokes it.

    Granting needs the dataset in the identity's declaration (400
    ``dataset_not_declared``); revoking always works.
    """
    _check_known([body.dataset])
    platform = platform_of(request)
    now = platform.clock.time()

    def change(conn: sqlite3.Connection) -> GrantState:
        _check_identity(conn, body.identity)
        _check_member(conn, body.member_id)
        if body.granted:
            version = _declared_versions(conn, body.identity).get(body.dataset)
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
        (state,) = _grant_states(conn, body.identity, body.member_id, [body.dataset])
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
        _check_identity(conn, identity_name)
        _check_member(conn, member_id)
        return _grant_states(conn, identity_name, member_id, list(DATA_ACCESS_CAPABILITIES))

    return await platform_of(request).store.read(fetch)


@dev_router.put("/group-settings", response_model=GroupSetting)
async def put_group_setting(request: Request, body: GroupSetting) -> GroupSetting:
    """A member turns a dataset off in one group (queries there answer ``disabledInGroup``)
    or on again."""
    _check_known([body.dataset])

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
        _erase_expired(conn, now)
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
            declared = _declared_versions(conn, identity_name)
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


def _check_items(dataset: str, items: list[dict[str, Any]]) -> None:
    fields = DATA_ACCESS_CAPABILITIES[dataset].item_fields
    for index, item in enumerate(items):
        for key, value in item.items():
            if key not in fields:
                raise Reject(
                    400,
                    "item_field_unknown",
                    f"items.{index}.{key} is not a field of {dataset} ({', '.join(fields)})",
                )
            if not _finite(value):
                raise Reject(
                    400, "item_value_invalid", f"items.{index}.{key}: numbers must be finite"
                )


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


@dev_router.put("/data", response_model=MemberData)
async def put_data(request: Request, body: DevDataOverride) -> MemberData:
    """Override a member's data of one dataset (``items: null`` = no data → ``unavailable``).

    Item fields must be the catalogue's item fields of that dataset.
    """
    _check_known([body.dataset])
    if body.items is not None:
        _check_items(body.dataset, body.items)
    platform = platform_of(request)
    now = platform.clock.time()

    def put(conn: sqlite3.Connection) -> None:
        _check_member(conn, body.member_id)
        conn.execute(
            "INSERT INTO data_overrides (member_id, dataset, items, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (member_id, dataset) DO UPDATE SET items = excluded.items,"
            " updated_at = excluded.updated_at",
            (body.member_id, body.dataset, None if body.items is None else dumps(body.items), now),
        )

    await platform.store.write(put)
    return MemberData(
        member_id=body.member_id, dataset=body.dataset, source="override", items=body.items
    )


MemberParam = Annotated[str, Query(min_length=1, max_length=64)]
DatasetParam = Annotated[str, Query(min_length=1, max_length=64)]


async def _member_data(request: Request, member_id: str, dataset: str, reset: bool) -> MemberData:
    _check_known([dataset])
    platform = platform_of(request)
    now = platform.clock.time()

    def fetch(conn: sqlite3.Connection) -> MemberData:
        _check_member(conn, member_id)
        if reset:
            conn.execute(
                "DELETE FROM data_overrides WHERE member_id = ? AND dataset = ?",
                (member_id, dataset),
            )
        source, items = _items_of(conn, member_id, dataset, now)
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
