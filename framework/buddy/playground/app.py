"""The playground's routes on the dev platform's app: the page and its endpoints.

- ``GET /playground/`` — the page: ``static/`` of this package (HTML, vanilla JS, CSS;
  nothing fetched from elsewhere, no build step). ``app.js`` is the shell; each
  capability's part of the page is its own script (``Capability.page``).
- ``GET /playground/parts/{name}.js`` — capability ``name``'s script (a file of its
  package, nothing else of it), loaded by the shell before the page starts.
- ``GET /playground/api/config`` — the admin token and the capabilities' scripts, for
  the page. The token is answered only to a
  request that comes from loopback **and** names a loopback host (``127.0.0.1``,
  ``localhost``, ``[::1]``) in its ``Host`` header; ``buddy dev`` listens on 127.0.0.1
  only. Another web site open in the same browser cannot read it: a cross-origin
  ``fetch`` gets no CORS headers, and a DNS-rebinding page (its own name resolving to
  127.0.0.1) is refused by the ``Host`` check.
- ``GET /playground/api/state`` (admin token) — the session's buddies: status, version,
  located problems, tools with labels, the compiled view's system prompts, hooks and
  proactive section (``buddy.compile.render.view``), widget types with their record
  schemas, declared subscriptions and data, and each buddy's dev token (memory has no dev endpoint; the page
  reads and edits it through the buddy's own ``/internal/v1/memory``).
- ``POST /playground/api/record`` (admin token) — "Save as scenario": the conversation
  into the buddy's ``tests/`` as a scenario file (:mod:`buddy.testing.record`); 409 when
  that file exists, unless the page says ``overwrite``.
- ``GET /playground/api/events`` (admin token) — a server-sent-events stream of the agent
  loop's events (``BuddyServer``'s ``on_event``: streamed text, tool starts and ends) and
  of reloads, so the page shows a turn as it happens; everything else the page reads from
  the platform's own ``/dev`` endpoints.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import (
    FileResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from fastapi.staticfiles import StaticFiles

from buddy.errors import Reject
from buddy.extend import pages

__all__ = ["LOOPBACK_HOSTS", "STATIC", "Hub", "Playground", "attach"]

STATIC = Path(__file__).with_name("static")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
_LOOPBACK_PEERS = frozenset({"127.0.0.1", "::1", "::ffff:127.0.0.1"})
KEEPALIVE_SECONDS = 15.0
_NO_STORE = {"Cache-Control": "no-store"}


class Hub:
    """Fans events out to the page's open streams (one queue per stream)."""

    def __init__(self, size: int = 2000) -> None:
        self.size = size
        self._queues: set[asyncio.Queue[dict[str, Any] | None]] = set()

    def subscribe(self) -> asyncio.Queue[dict[str, Any] | None]:
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(self.size)
        self._queues.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        self._queues.discard(queue)

    def publish(self, item: dict[str, Any]) -> None:
        for queue in list(self._queues):
            with contextlib.suppress(asyncio.QueueFull):  # a stalled page loses live events only
                queue.put_nowait(item)

    def close(self) -> None:
        for queue in list(self._queues):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)
        self._queues.clear()


class Playground(Protocol):
    """What the page's endpoints read of the session that runs the buddies
    (:class:`buddy.playground.session.DevSession`)."""

    @property
    def admin_token(self) -> str:
        """The dev platform's admin token (the page is given it on loopback)."""
        ...

    @property
    def url(self) -> str:
        """Where the dev platform is served."""
        ...

    @property
    def version(self) -> int:
        """Grows on every change of what :meth:`state` answers."""
        ...

    @property
    def hub(self) -> Hub:
        """The page's live event streams."""
        ...

    def state(self) -> dict[str, Any]:
        """Everything the page shows, as JSON data."""
        ...

    def layers(self, buddy: str, conversation_id: str) -> list[dict[str, Any]] | None:
        """What each conversation layer of the running buddy ``buddy`` (its key) knows of
        the conversation (``Layer.inspect``); ``None`` when no such buddy runs."""
        ...

    def prompts(self, buddy: str, conversation_id: str) -> list[dict[str, Any]]:
        """The system prompts the running buddy sent in the conversation's last turns
        (newest last), each with where every declared part landed."""
        ...

    async def record(self, buddy: str, conversation_id: str, *, overwrite: bool) -> dict[str, Any]:
        """Write the conversation into the buddy's ``tests/`` as a scenario file:
        ``{path, notes}`` (409 ``scenario_exists`` unless ``overwrite``)."""
        ...


def _host_name(header: str) -> str:
    """``127.0.0.1`` of ``127.0.0.1:8700``; ``[::1]`` of ``[::1]:8700``."""
    if header.startswith("["):
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0] if ":" in header else header


def require_loopback(request: Request) -> None:
    """Refuse a request that did not come from loopback to a loopback host name."""
    peer = request.client.host if request.client is not None else ""
    host = _host_name(request.headers.get("host", "")).lower()
    if peer not in _LOOPBACK_PEERS or host not in LOOPBACK_HOSTS:
        raise Reject(
            403,
            "loopback_only",
            "the playground's token is given only to pages opened at 127.0.0.1 or localhost",
        )


def require_admin(request: Request, token: str) -> None:
    """Refuse a request without the admin token (as the ``/dev`` endpoints do)."""
    given = request.headers.get("authorization", "")
    if not token or not secrets.compare_digest(given.encode(), f"Bearer {token}".encode()):
        raise Reject(401, "unauthorized", "the playground endpoints need the admin token")


def attach(app: FastAPI, session: Playground) -> None:
    """Add the page and its endpoints to the dev platform's ``app``."""
    router = APIRouter(prefix="/playground/api", include_in_schema=False)

    scripts = pages()

    @router.get("/config")
    async def config(request: Request) -> JSONResponse:
        require_loopback(request)
        body = {
            "admin_token": session.admin_token,
            "platform": session.url,
            "parts": [f"/playground/parts/{name}.js" for name in scripts],
        }
        return JSONResponse(body, headers=_NO_STORE)

    @app.get("/playground/parts/{name}.js", include_in_schema=False)
    async def part(name: str) -> FileResponse:
        file = scripts.get(name)
        if file is None or not file.is_file():
            raise Reject(404, "not_found", f"no capability {name!r} has a playground script")
        return FileResponse(file, media_type="text/javascript", headers=_NO_STORE)

    @router.get("/state")
    async def state(request: Request) -> JSONResponse:
        require_loopback(request)
        require_admin(request, session.admin_token)
        return JSONResponse(session.state(), headers=_NO_STORE)

    @router.get("/layers")
    async def layers(request: Request) -> JSONResponse:
        """The conversation layers' view of one conversation (the context inspector) and
        the system prompts of its last turns: ``?buddy=<key>&conversation=<id>``, read
        after the token is checked."""
        require_loopback(request)
        require_admin(request, session.admin_token)
        buddy = request.query_params.get("buddy", "")
        conversation = request.query_params.get("conversation", "")
        if not buddy or not conversation:
            raise Reject(400, "invalid_request", "name the buddy and the conversation")
        found = session.layers(buddy, conversation)
        if found is None:
            raise Reject(404, "not_found", f"no buddy {buddy!r} is running")
        prompts = session.prompts(buddy, conversation)
        return JSONResponse({"layers": found, "prompts": prompts}, headers=_NO_STORE)

    @router.post("/record")
    async def record(request: Request) -> JSONResponse:
        return await _record(request, session)

    @router.get("/events")
    async def events(request: Request) -> Response:
        require_loopback(request)
        require_admin(request, session.admin_token)
        queue = session.hub.subscribe()

        async def stream() -> AsyncIterator[str]:
            try:
                yield f"event: hello\ndata: {json.dumps({'version': session.version})}\n\n"
                while True:
                    try:
                        item = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                    except TimeoutError:
                        yield ": keep-alive\n\n"
                        continue
                    if item is None:
                        return
                    yield f"data: {_json(item)}\n\n"
            finally:
                session.hub.unsubscribe(queue)

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={**_NO_STORE, "X-Accel-Buffering": "no"},
        )

    @app.get("/", include_in_schema=False)
    async def home() -> RedirectResponse:
        return RedirectResponse("/playground/")

    app.include_router(router)
    app.mount("/playground", StaticFiles(directory=STATIC, html=True), name="playground")


async def _record(request: Request, session: Playground) -> JSONResponse:
    """ "Save as scenario": ``{buddy, conversation, overwrite?}`` → ``{path, notes}``
    (docs/playground.md); 409 when the file exists and ``overwrite`` is not true."""
    require_loopback(request)
    require_admin(request, session.admin_token)
    try:
        body = await request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or not all(
        isinstance(body.get(k), str) and body[k] for k in ("buddy", "conversation")
    ):
        raise Reject(400, "invalid_request", "name the buddy and the conversation")
    saved = await session.record(
        body["buddy"], body["conversation"], overwrite=body.get("overwrite") is True
    )
    return JSONResponse(saved, headers=_NO_STORE)


def _json(item: Any) -> str:
    return json.dumps(item, ensure_ascii=False, default=str, separators=(",", ":"))
