"""The dev platform inside this process, with no server: what ``buddy.Agent`` runs on.

The app of :func:`~buddy.platform.dev.app.create_app` over an in-memory SQLite database,
called through httpx's ASGI transport by the same
:class:`~buddy.platform.client.HttpPlatformClient` a served buddy uses: every capability
runs the code and keeps the limits it keeps on the dev platform, and every refusal is the
``PlatformError`` — status and reason — production would raise. No socket is opened and
no scheduler runs in real time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx

from buddy.extend import start
from buddy.platform.api import Json
from buddy.platform.client import HttpPlatformClient, refusal
from buddy.platform.dev.app import create_app
from buddy.platform.http11 import Answer

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["BUDDY_ID", "InProcessPlatform"]

#: The identity the buddy has on its in-process platform.
BUDDY_ID = "agent"
_BASE = "http://in-process"


#: A path httpx sends as it is written (no character it would percent-encode, no ``%``: an
#: escape it would check); one with a dot segment (``/./``, ``/../``, which it removes) is
#: left to httpx too.
_AS_WRITTEN = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*")
_BODY_METHODS = ("POST", "PUT", "PATCH")


class _Client(HttpPlatformClient):
    """The buddy's client of the in-process platform: each request goes straight to the
    app over the ASGI interface, as httpx's ASGI transport hands it over — the scope, the
    request's header fields in httpx's order (``Host`` first, ``Content-Length`` as httpx
    adds it) and its body in the same messages — without the client's machinery around it
    (base URL, cookies, auth and redirect handling: about a quarter of an in-process call)
    and, for a request httpx would send as it is written (no query, a path it would not
    re-encode, header values of printable ASCII), without building httpx's request and
    response objects (another fifth). Any other request is built by httpx and handed to
    its transport. Only the transport is this process's: the request goes through the
    whole app — its middleware, routing, token check, validation and store — as a served
    buddy's does."""

    def __init__(self, token: str, transport: httpx.ASGITransport, http: httpx.AsyncClient) -> None:
        super().__init__(_BASE, token, http=http)
        self._asgi = transport

    async def _send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        content: bytes | None,
        params: Mapping[str, Any] | None,
    ) -> httpx.Response | Answer:
        path = url[len(_BASE) :]
        if (
            params
            or not self._asgi.raise_app_exceptions
            or not url.startswith(_BASE)
            or _AS_WRITTEN.fullmatch(path) is None
            or "/." in path
            or not all(_plain(value) for value in headers.values())
        ):
            request = httpx.Request(method, url, params=params, headers=headers, content=content)
            response = await self._asgi.handle_async_request(request)
            await response.aread()
            return response
        return await self._exchange(method.upper(), path, headers, content)

    async def _exchange(
        self, method: str, path: str, headers: dict[str, str], content: bytes | None
    ) -> Answer:
        """One request through the app, as :meth:`httpx.ASGITransport.handle_async_request`
        makes it (app exceptions raised, as that transport raises them)."""
        fields = [(b"host", _HOST)]
        if not content and method in _BODY_METHODS:
            fields.append((b"content-length", b"0"))
        fields.extend((name.lower().encode(), value.encode()) for name, value in headers.items())
        if content:
            fields.append((b"content-length", str(len(content)).encode()))
        transport = self._asgi
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "headers": fields,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "server": (_HOST.decode(), None),
            "client": transport.client,
            "root_path": transport.root_path,
        }
        sent = 0  # messages of the request's body given to the app
        status: int | None = None
        fields_out: list[tuple[bytes, bytes]] = []
        parts: list[bytes] = []
        complete = False
        completed: asyncio.Event | None = None

        async def receive() -> dict[str, Any]:
            nonlocal sent, completed
            sent += 1
            if sent == 1:  # httpx's byte stream: the whole body in one chunk, then the end
                return {"type": "http.request", "body": content or b"", "more_body": True}
            if sent == 2:
                return {"type": "http.request", "body": b"", "more_body": False}
            if not complete:
                completed = completed or asyncio.Event()
                await completed.wait()
            return {"type": "http.disconnect"}

        async def send(message: Any) -> None:
            nonlocal status, fields_out, complete
            if message["type"] == "http.response.start":
                assert status is None
                status = message["status"]
                fields_out = list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                assert not complete
                body = message.get("body", b"")
                if body and method != "HEAD":
                    parts.append(body)
                if not message.get("more_body", False):
                    complete = True
                    if completed is not None:
                        completed.set()

        await transport.app(scope, receive, send)
        assert complete and status is not None
        return Answer(status, httpx.codes.get_reason_phrase(status), fields_out, b"".join(parts))


_HOST = _BASE.split("://", 1)[1].encode()


def _plain(value: str) -> bool:
    """A header value httpx sends as it is: printable ASCII, no outer spaces."""
    return value.isascii() and value.isprintable() and value == value.strip()


class InProcessPlatform:
    """A private dev platform for one buddy, open until :meth:`close`.

    Use :meth:`open` to make one: it registers the buddy and runs every capability's
    start-up (its data declaration and widget types are uploaded, as at a real start).

    Attributes:
        client: The buddy's client (its production token).
        admin: A client of the ``/dev`` endpoints (the admin token), to act as users and
            the world: grant data, answer cards, advance the clock.
    """

    def __init__(self) -> None:
        token = f"adm_{secrets.token_urlsafe(16)}"
        self._app = create_app(":memory:", admin_token=token, scheduler=False)
        transport = httpx.ASGITransport(app=self._app)
        self.admin = httpx.AsyncClient(
            transport=transport, base_url=_BASE, headers={"Authorization": f"Bearer {token}"}
        )
        self._transport = transport
        self._running = contextlib.AsyncExitStack()
        self.client: HttpPlatformClient | None = None

    @classmethod
    async def open(cls, blueprint: Blueprint | None = None) -> InProcessPlatform:
        """A platform with ``blueprint``'s buddy registered and started on it."""
        platform = cls()
        await platform._running.enter_async_context(
            platform._app.router.lifespan_context(platform._app)
        )
        created = await platform.dev("POST", "/buddies", {"buddy_id": BUDDY_ID})
        http = httpx.AsyncClient(transport=platform._transport, base_url=_BASE)
        platform.client = _Client(created["token"], platform._transport, http)
        platform._running.push_async_callback(http.aclose)
        if blueprint is not None:
            await start(platform.client, blueprint)
        return platform

    async def conversation(self, kind: str = "private", members: tuple[str, ...] = ("我",)) -> str:
        """A new conversation of the buddy; its id."""
        body = {"identity": BUDDY_ID, "kind": kind, "members": [{"name": n} for n in members]}
        created = await self.dev("POST", "/conversations", body)
        return str(created["id"])

    async def emit(self, type_: str, conversation_id: str, payload: Mapping[str, Any]) -> str:
        """An event of any type for the buddy in one of its conversations, stored as the
        platform's own parts store theirs (a proactive run, a consent answer); its id."""
        platform = self._app.state.platform
        event_id: str = await platform.emit(BUDDY_ID, type_, conversation_id, dict(payload))
        return event_id

    async def event(self, event_id: str) -> dict[str, Any]:
        """A stored event as the gateway delivers it now (``id``, ``type``,
        ``conversation_id``, ``payload``, ``created_at``, ``revisions``)."""
        platform = self._app.state.platform

        def one(conn: Any) -> dict[str, Any]:
            row = conn.execute(
                "SELECT id, type, conversation_id, payload, created_at FROM events WHERE id = ?",
                (event_id,),
            ).fetchone()
            if row is None:
                raise KeyError(event_id)
            revisions = platform.revisions_in(conn, row["conversation_id"])
            return {**dict(row), "payload": json.loads(row["payload"]), "revisions": revisions}

        found: dict[str, Any] = await platform.store.read(one)
        return found

    async def revisions(self, conversation_id: str) -> dict[str, int]:
        """The conversation's state revisions now, by part: what an event the gateway
        delivered now would carry (``buddy.Agent``'s own events carry them so). Every
        change is made by this process's handlers, so after the first read (a trip to the
        store) they are taken from what the handlers committed (``Platform.latest``)."""
        platform = self._app.state.platform
        latest = platform.latest.get(conversation_id, {})
        if not platform.revisions.keys() <= latest.keys():
            found: dict[str, int] = await platform.store.read(
                lambda conn: platform.revisions_in(conn, conversation_id)
            )
            for part, revision in found.items():
                platform.moved(part, conversation_id, revision)
            latest = platform.latest.get(conversation_id, {})
        return dict(latest)

    async def ack(self, event_id: str) -> None:
        """Acknowledge an event, as the gateway does when a served buddy acks it."""
        store = self._app.state.platform.store

        def ack(conn: Any) -> None:
            conn.execute(
                "UPDATE events SET acked_at = ? WHERE id = ? AND acked_at IS NULL",
                (self.now(), event_id),
            )

        await store.write(ack)

    def now(self) -> float:
        """The platform clock (seconds since the epoch, advanced as ``POST /dev/clock``
        moves it), read in process."""
        return float(self._app.state.platform.clock.time())

    async def dev(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Json:
        """One dev endpoint (``path`` under ``/dev``), as the admin.

        Raises:
            PlatformError: The platform refused it (its status and reason).
        """
        response = await self.admin.request(method, f"/dev{path}", json=body)
        if response.status_code >= 400:
            raise refusal(response)
        return response.json() if response.content else None

    async def close(self) -> None:
        """Close the database and the clients."""
        await self._running.aclose()
        await self.admin.aclose()
