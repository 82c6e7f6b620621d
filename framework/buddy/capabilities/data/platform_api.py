"""The data capability's ``/internal/v1/data-access`` routes: the buddy's declaration, its
queries, its consent cards and their one-time results
(:mod:`buddy.capabilities.data.platform`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.capabilities.data.limits import CALENDAR_DAYS_DEFAULT, QUERY_RESPONSE_BYTES
from buddy.capabilities.data.platform_store import declared_versions, erase_expired, items_of
from buddy.capabilities.data.wire import (
    ConsentRequest,
    ConsentRequested,
    DataQuery,
    DatasetStatus,
    Declaration,
    DeclarationAccepted,
    DeclaredRequirement,
    OneTimeResult,
    QueryAnswer,
    grant_version,
)
from buddy.errors import Reject
from buddy.platform.dev.core import (
    ConversationRow,
    Identity,
    conversation,
    dumps,
    identity,
    new_id,
    platform_of,
)

__all__ = ["RequestId", "router"]


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

Conv = Annotated[ConversationRow, Depends(conversation)]
Who = Annotated[Identity, Depends(identity)]
RequestId = Annotated[str, Path(min_length=1, max_length=64)]


# ---------------------------------------------------------------- shared checks


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
    member_id = _member_of(conv, body.member_id)
    platform = platform_of(request)
    now = platform.clock.time()

    def answer(conn: sqlite3.Connection) -> list[dict[str, Any]]:
        declared = declared_versions(conn, conv.identity)
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
                _, items = items_of(conn, member_id, dataset, now)
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

    ``healthkit`` asks for declared datasets (required; ``400 dataset_not_declared`` for
    one not declared); ``location`` and ``calendar`` ask for a one-time result
    (``calendar_days`` 1–31, default 7, calendar only). Private conversations only
    (``400 consent_private_only``). The same
    ``idempotency_key`` in the same conversation answers the first request again (200),
    whatever the rest of the body says.
    """
    if not conv.private:
        raise Reject(
            400,
            "consent_private_only",
            "consent cards can only be sent in a private chat; ask the member to open one",
        )
    # The model checked which fields each kind takes (`request_invalid`).
    datasets = list(body.datasets or ()) if body.kind == "healthkit" else []
    days = (body.calendar_days or CALENDAR_DAYS_DEFAULT) if body.kind == "calendar" else None
    platform = platform_of(request)
    now = platform.clock.time()

    def create(conn: sqlite3.Connection) -> tuple[ConsentRequested, bool]:
        erase_expired(conn, now)
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
        erase_expired(conn, now)
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
