"""The dev platform: a FastAPI app over SQLite that implements docs/protocol.md.

``create_app`` assembles it from its parts (:mod:`buddy.platform.dev.parts`: the core
conversation part and every registered capability's ``platform`` module — tables,
routers, scheduler work, commit gates), the websocket gateway and the scheduler. ``buddy platform`` serves it with uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import unquote_to_bytes

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from buddy.errors import Reject
from buddy.platform.dev import gateway
from buddy.platform.dev.core import CORE_TABLES, Clock, Platform
from buddy.platform.dev.journal import JOURNAL_TABLES
from buddy.platform.dev.parts import PlatformPart, parts
from buddy.platform.dev.store import Store

__all__ = ["REQUEST_BODY_BYTES", "SCHEDULER_PERIOD", "create_app"]

log = logging.getLogger("buddy.platform")
SCHEDULER_PERIOD = 1.0  # seconds between scheduler ticks in real time
# No request of the protocol comes near this (a turn commit has at most TURN_STEPS_MAX
# steps); a body over it is refused before it is read into memory (and so before the token
# is checked or the database is read).
REQUEST_BODY_BYTES = 8 * 1024 * 1024
_TOO_LARGE = f"the request body is over the {REQUEST_BODY_BYTES} bytes a request may carry"


def _error(status: int, code: str, reason: str) -> JSONResponse:
    return JSONResponse({"status": status, "code": code, "reason": reason}, status_code=status)


def _undecodable(raw: bytes) -> tuple[int, str] | None:
    """The first byte offset (in the decoded bytes) at which a percent-encoded ``raw``
    is not UTF-8, and the decoded text before it; ``None`` when all of it is UTF-8."""
    data = unquote_to_bytes(raw)
    try:
        data.decode("utf-8")  # strict: refuses encoded surrogates (%ED%A0%80) too
    except UnicodeDecodeError as exc:
        return exc.start, data[: exc.start].decode("utf-8", "replace")
    return None


class _Utf8Paths:
    """Refuses a request whose path or query string percent-encodes bytes that are not
    UTF-8 (400). Servers decode such bytes to U+FFFD, so ``/memory/%FF`` and
    ``/memory/%FE`` would otherwise name the same key.

    The code answered is the one of the limit on the segment (the parts' ``PATH_CODES``,
    by path prefix), so a client handles it as the key it is; else ``path_invalid``."""

    def __init__(self, app: ASGIApp, codes: dict[str, str]) -> None:
        self.app = app
        self.codes = codes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            raw = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
            bad = _undecodable(raw.split(b"?", 1)[0])
            if bad is not None:
                before = bad[1]
                code = next(
                    (c for prefix, c in self.codes.items() if before.startswith(prefix)),
                    "path_invalid",
                )
                segment = before.rsplit("/", 1)[-1]
                reason = (
                    f"the path is not UTF-8: the segment after {before[: len(before) - len(segment)]!r}"
                    f" has bytes that are not UTF-8 at byte {len(segment.encode()) + 1};"
                    " percent-encode text as UTF-8"
                )
                await self._refuse(scope, receive, send, code, reason)
                return
            if _undecodable(scope.get("query_string", b"")) is not None:
                reason = "the query string is not UTF-8; percent-encode text as UTF-8"
                await self._refuse(scope, receive, send, "invalid_request", reason)
                return
        await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, code: str, reason: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": code})
            return
        await _error(400, code, reason)(scope, receive, send)


class _BodyLimit:
    """Refuses request bodies over ``REQUEST_BODY_BYTES`` with 413, by their declared
    length or, for a chunked body, as soon as the bytes read pass it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > REQUEST_BODY_BYTES:
            await _error(413, "payload_too_large", _TOO_LARGE)(scope, receive, send)
            return
        read = 0

        async def limited() -> Message:
            nonlocal read
            message = await receive()
            read += len(message.get("body", b""))
            if read > REQUEST_BODY_BYTES:  # answered by the app's HTTPException handler
                raise StarletteHTTPException(413, _TOO_LARGE)
            return message

        await self.app(scope, limited, send)


def create_app(
    db: str = "buddy-platform.db",
    *,
    admin_token: str | None = None,
    on_ready: Callable[[Platform], None] | None = None,
    scheduler: bool = True,
) -> FastAPI:
    """The dev platform app.

    Args:
        db: SQLite database path (``:memory:`` for a throwaway platform).
        admin_token: Bearer token of the ``/dev`` endpoints; when ``None`` the one stored
            in the database is used, or a new one is made and stored.
        on_ready: Called once the database is open (e.g. to print the admin token).
        scheduler: Run the proactive scheduler in real time. Without it subscriptions
            still run when the dev clock is advanced (``POST /dev/clock``).
    """
    pieces = list(parts())
    store = Store(db, [CORE_TABLES, JOURNAL_TABLES, *(p.tables for p in pieces)])
    clock = Clock()
    platform = Platform(
        store=store,
        clock=clock,
        admin_token=admin_token or "",
        gates={kind: gate for piece in pieces for kind, gate in piece.gates.items()},
        revisions={p.name: p.revision for p in pieces if p.revision is not None},
    )
    ticks = [p.tick for p in pieces if p.tick is not None]

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await store.open()
        platform.admin_token, clock.offset = await store.write(
            lambda conn: _restore(conn, admin_token)
        )
        platform.extras["gateway"] = gateway.Gateway(platform)

        async def tick() -> None:
            for work in ticks:
                await work(platform)

        clock.listeners.append(tick)
        ticking = asyncio.create_task(_schedule(tick)) if scheduler else None
        if on_ready is not None:
            on_ready(platform)
        try:
            yield
        finally:
            if ticking is not None:
                ticking.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticking
            await store.close()

    app = FastAPI(
        title="buddy dev platform",
        version="1",
        description="The buddy platform protocol (docs/protocol.md), served locally over SQLite.",
        lifespan=lifespan,
    )
    app.state.platform = platform

    @app.exception_handler(Reject)
    async def rejected(request: Request, exc: Reject) -> JSONResponse:
        return _error(exc.status, exc.code, exc.reason)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(
            exc.status_code, "http_error"
        )
        if exc.status_code == 405:
            allowed = _allowed_methods(app.state.routes, request.scope)
            reason = f"{request.method} is not allowed here; allowed: {', '.join(allowed)}"
            response = _error(405, code, reason)
            response.headers["Allow"] = ", ".join(allowed)
            return response
        response = _error(exc.status_code, code, str(exc.detail))
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        ctx = first.get("ctx")
        code = ctx.get("code") if isinstance(ctx, dict) else None
        if isinstance(code, str):  # a rule with its own code (protocol.conversation.refused)
            return _error(400, code, str(first.get("msg")))
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return _error(
            400,
            "invalid_request",
            f"{where}: {first.get('msg')}" if where else str(first.get("msg")),
        )

    routers = [p.routers[0] for p in pieces] + [r for p in pieces for r in p.routers[1:]]
    app.router.routes.extend(_included([*routers, gateway.router]))
    # Each route as declared (an included router is one entry of the app's): what a 405's
    # Allow is read from.
    app.state.routes = [r for r in app.router.routes if isinstance(r, Route)] + [
        r for router in (*routers, gateway.router) for r in router.routes
    ]
    app.add_middleware(_BodyLimit)
    app.add_middleware(_Utf8Paths, codes={k: v for p in pieces for k, v in p.path_codes.items()})
    app.openapi = lambda: _openapi(app, pieces)  # type: ignore[method-assign]
    return app


# Router ids → (the routers, kept so an id is not reused; their routes as included).
_INCLUDED: dict[tuple[int, ...], tuple[tuple[APIRouter, ...], tuple[BaseRoute, ...]]] = {}


def _included(routers: Sequence[APIRouter]) -> tuple[BaseRoute, ...]:
    """The routes of ``routers`` as an app includes them, made once per process.

    FastAPI builds an included route's handler (its dependencies, body and response
    models) on the first request that reaches it and keeps it in the route included, so
    each new app paid it again: ~36 ms for the platform's routes, most of what one
    ``buddy test`` scenario cost. The routes hold nothing of an app — a handler finds its
    platform through the request (:func:`~buddy.platform.dev.core.platform_of`) — so
    every app shares them; what a router changes later is rebuilt by FastAPI. Included
    here, not in an app, they miss what an app would add: its ``dependency_overrides``
    (unused here) and the routers' start-up handlers (parts have none, see
    :mod:`buddy.platform.dev.parts`).
    """
    key = tuple(map(id, routers))
    if key not in _INCLUDED:
        shell = APIRouter()
        for router in routers:
            shell.include_router(router)
        _INCLUDED[key] = (tuple(routers), tuple(shell.routes))
    return _INCLUDED[key][1]


_ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "status": {"type": "integer"},
        "code": {"type": "string"},
        "reason": {"type": "string"},
    },
    "required": ["status", "code", "reason"],
}


def _openapi(app: FastAPI, pieces: list[PlatformPart]) -> dict[str, Any]:
    """FastAPI's document, with errors as this platform answers them (400, not 422):
    every status each operation answers, with the error body, and links between the
    operations that make something and those that read, change or delete it."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    statuses = {k: v for p in pieces for k, v in p.statuses.items()}
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    components["Error"] = _ERROR_SCHEMA
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}

    def refused(description: str) -> dict[str, Any]:
        return {"description": description, "content": error}

    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            responses.setdefault("400", refused("Invalid request (the reason says what and where)"))
            responses.setdefault("401", refused("Missing or wrong token"))
            parameters = operation.get("parameters", [])
            if any(p["in"] == "path" or p["name"] == "X-Conversation-Id" for p in parameters):
                responses.setdefault("404", refused("No such conversation, or no such item"))
            if "requestBody" in operation:
                responses.setdefault("413", refused(_TOO_LARGE))
            for status, when in statuses.get((method, path), {}).items():
                if status.startswith("2"):  # another success: the same body as the first
                    first = next(v for k, v in sorted(responses.items()) if k.startswith("2"))
                    responses.setdefault(status, {**first, "description": when})
                else:
                    responses.setdefault(status, refused(when))
    ids = {
        (method, path): operation["operationId"]
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
    }
    for (method, path, status), links in (k for p in pieces for k in p.links.items()):
        response = schema["paths"][path][method]["responses"][status]
        # Several parts may link from one operation (a new conversation's widgets).
        response.setdefault("links", {}).update(
            {
                name: {"operationId": ids[(verb, target)], "parameters": parameters}
                for name, (verb, target, parameters) in links.items()
            }
        )
    app.openapi_schema = schema
    return schema


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> list[str]:
    """Every method the OpenAPI document gives the request's path (each route has its own
    methods, and the router's 405 names only the first route's).

    A path may match several templates (``/widgets/w_1/presentation`` matches
    ``/widgets/{widget_id}/presentation`` and ``/widgets/{widget_id}/{module}``); as in
    OpenAPI, the one with a literal segment where another has a parameter, first from the
    left, is the path's, and its methods are the ones allowed.
    """
    found = [
        (getattr(route, "path_format", ""), method)
        for method in _METHODS
        for route in routes
        if route.matches({**scope, "method": method})[0] is Match.FULL
    ]
    if not found:
        return []
    path = max((p for p, _ in found), key=_literal_segments)
    return [method for method in _METHODS if (path, method) in found]


def _literal_segments(path: str) -> tuple[bool, ...]:
    return tuple(not segment.startswith("{") for segment in path.split("/"))


def _restore(conn: sqlite3.Connection, admin_token: str | None) -> tuple[str, float]:
    """The admin token and clock offset kept in the database (made on first start)."""
    rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    token = admin_token or rows.get("admin_token") or f"adm_{secrets.token_urlsafe(24)}"
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('admin_token', ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (token,),
    )
    return token, float(rows.get("clock_offset", 0.0))


async def _schedule(tick: Callable[[], Awaitable[None]]) -> None:
    while True:
        try:
            await tick()
        except Exception:  # the scheduler must outlive one bad tick
            log.exception("scheduler tick failed")
        await asyncio.sleep(SCHEDULER_PERIOD)
