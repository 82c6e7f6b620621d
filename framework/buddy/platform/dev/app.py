"""The dev platform: a FastAPI app over SQLite that implements docs/protocol.md.

``create_app`` assembles it: the core tables and every capability module's tables and
router, the websocket gateway, the dev endpoints (admin token) and the proactive
scheduler. ``buddy platform`` serves it with uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import sqlite3
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from buddy.platform.dev import conversations, data, gateway, memory, proactive, widgets
from buddy.platform.dev.core import CORE_TABLES, Clock, Platform, Reject
from buddy.platform.dev.store import Store

__all__ = ["REQUEST_BODY_BYTES", "SCHEDULER_PERIOD", "create_app"]

log = logging.getLogger("buddy.platform")
SCHEDULER_PERIOD = 1.0  # seconds between scheduler ticks in real time
_CAPABILITIES = (conversations, memory, widgets, data, proactive)
# No request of the protocol comes near this; a body over it is refused before it is read
# into memory (and so before the token is checked).
REQUEST_BODY_BYTES = 8 * 1024 * 1024
_TOO_LARGE = f"the request body is over the {REQUEST_BODY_BYTES} bytes a request may carry"


def _error(status: int, code: str, reason: str) -> JSONResponse:
    return JSONResponse({"status": status, "code": code, "reason": reason}, status_code=status)


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
) -> FastAPI:
    """The dev platform app.

    Args:
        db: SQLite database path (``:memory:`` for a throwaway platform).
        admin_token: Bearer token of the ``/dev`` endpoints; when ``None`` the one stored
            in the database is used, or a new one is made and stored.
        on_ready: Called once the database is open (e.g. to print the admin token).
    """
    store = Store(db, [CORE_TABLES, *(m.TABLES for m in _CAPABILITIES)])
    clock = Clock()
    platform = Platform(store=store, clock=clock, admin_token=admin_token or "")

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await store.open()
        platform.admin_token, clock.offset = await store.write(
            lambda conn: _restore(conn, admin_token)
        )
        platform.extras["gateway"] = gateway.Gateway(platform)

        async def tick() -> None:
            await proactive.tick(platform)

        clock.listeners.append(tick)
        scheduler = asyncio.create_task(_schedule(platform))
        if on_ready is not None:
            on_ready(platform)
        try:
            yield
        finally:
            scheduler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await scheduler
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
        return _error(exc.status_code, code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return _error(
            400,
            "invalid_request",
            f"{where}: {first.get('msg')}" if where else str(first.get("msg")),
        )

    for module in _CAPABILITIES:
        app.include_router(module.router)
    app.include_router(conversations.dev_router)
    for module in _CAPABILITIES:
        extra: Any = getattr(module, "dev_router", None)
        if extra is not None and extra is not conversations.dev_router:
            app.include_router(extra)
    app.include_router(gateway.router)
    app.add_middleware(_BodyLimit)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


_ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "status": {"type": "integer"},
        "code": {"type": "string"},
        "reason": {"type": "string"},
    },
    "required": ["status", "code", "reason"],
}


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with errors as this platform answers them (400, not 422)."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    components["Error"] = _ERROR_SCHEMA
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in schema["paths"].values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            responses.setdefault("400", {"description": "Invalid request", "content": error})
            responses.setdefault("401", {"description": "Missing or wrong token", "content": error})
    app.openapi_schema = schema
    return schema


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


async def _schedule(platform: Platform) -> None:
    while True:
        try:
            await proactive.tick(platform)
        except Exception:  # the scheduler must outlive one bad tick
            log.exception("proactive scheduler tick failed")
        await asyncio.sleep(SCHEDULER_PERIOD)
