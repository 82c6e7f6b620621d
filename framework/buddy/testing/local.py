"""A dev platform on a loopback port, in this process, and a buddy running against it.

Used by ``buddy chat`` and by tests: everything goes over real sockets — the buddy's
HTTP calls and its websocket gateway — exactly as against a remote platform.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import httpx
import uvicorn

from buddy.compile.blueprint import Blueprint
from buddy.models.base import Model
from buddy.platform import asgi_socket
from buddy.platform.client import Backoff, HttpPlatformClient, refusal
from buddy.platform.dev.app import create_app
from buddy.platform.dev.conversations import event_acks
from buddy.platform.dev.core import Platform
from buddy.platform.dev.serving import server_config
from buddy.platform.dev.store import Store
from buddy.runtime.loop import AgentEvent
from buddy.runtime.server import Buddy, BuddyServer

__all__ = ["LocalPlatform", "free_port", "running_buddy", "served"]


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def served(
    app: Any, port: int, *, lifespan: Literal["auto", "on", "off"] = "auto"
) -> AsyncIterator[None]:
    """Serve the ASGI ``app`` with uvicorn on ``127.0.0.1:port`` while the block runs."""
    # The dev platform's read timeouts (slow clients are closed), as `buddy platform` has.
    config = server_config(app, "127.0.0.1", port, lifespan=lifespan)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises why it could not start
        await asyncio.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        await task


class LocalPlatform:
    """The dev platform, with helpers that act as users: served by uvicorn on loopback
    (``sockets=True``, the default: every byte over real sockets, as against a remote
    platform), or in this process (``sockets=False``: HTTP through an ASGI transport and
    the gateway's websocket through :mod:`buddy.platform.asgi_socket` — the same app and
    protocol, no port and no server start; what ``buddy test`` uses by default). Either
    way the platform runs in this process, and :meth:`wait_acked` watches its store.

    Use as ``async with LocalPlatform(db) as platform: ...``.
    """

    def __init__(
        self, db: str = ":memory:", *, port: int | None = None, sockets: bool = True
    ) -> None:
        self.db = db
        self.sockets = sockets
        self.port = (port or free_port()) if sockets else 0
        self.url = f"http://127.0.0.1:{self.port}" if sockets else "http://platform"
        self.admin_token = f"adm_{secrets.token_urlsafe(16)}"
        self.admin = {"Authorization": f"Bearer {self.admin_token}"}
        self._app: Any = None
        # The platform's store when it runs in this process (waits watch its changes).
        self._store: Store | None = None
        self._platform: Platform | None = None  # its state, for :meth:`emit`
        self._transport: httpx.AsyncBaseTransport | None = None
        if sockets:
            self.http = httpx.AsyncClient(base_url=self.url, timeout=30)
        self._serving = contextlib.AsyncExitStack()

    @property
    def state(self) -> Platform | None:
        """The platform's state (its store and clock), once started in this process."""
        return self._platform

    def app(self) -> Any:
        """The ASGI app served; a subclass may wrap it (fault tests inject failures so)."""
        return create_app(self.db, admin_token=self.admin_token)

    async def __aenter__(self) -> LocalPlatform:
        if self.sockets:
            app = self.app()
            self._store = _store_of(app)
            self._platform = _platform_of(app)
            await self._serving.enter_async_context(served(app, self.port, lifespan="on"))
            return self
        self._app = self.app()
        self._store = _store_of(self._app)
        self._platform = _platform_of(self._app)
        await self._serving.enter_async_context(self._app.router.lifespan_context(self._app))
        self._transport = httpx.ASGITransport(app=self._app)
        self.http = httpx.AsyncClient(transport=self._transport, base_url=self.url, timeout=30)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()
        await self._serving.aclose()

    def set_time(self, instant: float) -> None:
        """Set the platform clock to ``instant`` (seconds since the epoch), backwards too;
        it runs on from there. Two runs to be compared start from the same instant."""
        assert self._platform is not None, "set_time() inside `async with`"
        self._platform.clock.offset = instant - time.time()

    def buddy_client(self, token: str, **options: Any) -> HttpPlatformClient:
        """A buddy's client of this platform (over sockets, or in process)."""
        if self.sockets:
            return HttpPlatformClient(self.url, token, **options)
        app = self._app
        http = httpx.AsyncClient(transport=self._transport, base_url=self.url, timeout=30)

        def gateway(url: str, headers: Any) -> Any:
            return asgi_socket.connect(app, "/internal/v1/gateway", headers)

        client = HttpPlatformClient(self.url, token, http=http, gateway=gateway, **options)
        self._serving.push_async_callback(http.aclose)
        return client

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        """One dev call as the admin.

        Raises:
            PlatformError: The platform refused it (status, reason and code).
        """
        response = await self.http.request(method, path, headers=self.admin, **kwargs)
        if response.status_code >= 400:
            raise refusal(response)
        return response.json() if response.content else None

    async def register(self, buddy_id: str) -> dict[str, str]:
        """Register a buddy (or, if it is registered already, issue it new tokens)."""
        response = await self.http.post(
            "/dev/buddies", headers=self.admin, json={"buddy_id": buddy_id}
        )
        if response.status_code == 409:
            response = await self.http.post(f"/dev/buddies/{buddy_id}/tokens", headers=self.admin)
        if response.status_code >= 400:
            raise refusal(response)
        created: dict[str, str] = response.json()
        return created

    async def conversation(
        self, identity: str, kind: str = "private", members: list[str] | None = None
    ) -> dict[str, Any]:
        """Create a conversation; members by name."""
        names = members or ["我"]
        body = {"identity": identity, "kind": kind, "members": [{"name": n} for n in names]}
        info: dict[str, Any] = await self._json("POST", "/dev/conversations", json=body)
        return info

    async def say(self, conversation_id: str, text: str, member_id: str | None = None) -> str:
        """A user writes; the event id."""
        body: dict[str, Any] = {"text": text}
        if member_id is not None:
            body["member_id"] = member_id
        sent = await self._json("POST", f"/dev/conversations/{conversation_id}/messages", json=body)
        return str(sent["event_id"])

    async def click(self, conversation_id: str, message_id: str, option: str) -> str:
        """A user clicks a question card's option; the event id."""
        sent = await self._json(
            "POST",
            f"/dev/conversations/{conversation_id}/options",
            json={"message_id": message_id, "option": option},
        )
        return str(sent["event_id"])

    async def emit(
        self, identity: str, type_: str, conversation_id: str | None, payload: dict[str, Any]
    ) -> str:
        """Store an event of any type for ``identity`` and deliver it, as the platform's
        own parts do (a proactive run, a consent answer): an event no ``/dev`` route makes —
        a capability's own type, or one no capability of the buddy knows. Its id.

        Raises:
            RuntimeError: The app served is wrapped in another (:meth:`app` overridden).
        """
        if self._platform is None:
            raise RuntimeError("emit needs the dev platform's own app, not one wrapped in another")
        return await self._platform.emit(identity, type_, conversation_id, payload)

    async def events(self, identity: str) -> list[dict[str, Any]]:
        """Every event of an identity, with ``acked_at``."""
        events: list[dict[str, Any]] = await self._json(
            "GET", "/dev/events", params={"identity": identity}
        )
        return events

    async def wait_acked(
        self, identity: str, event_id: str | None = None, timeout: float = 30
    ) -> None:
        """Until the event (or every event) of ``identity`` is acknowledged.

        The events are read through ``GET /dev/events`` every 20 ms or, from a platform
        in this process, from its store whenever its rows change (an acknowledgement
        does): only those not acknowledged and ``event_id``'s.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        store = self._store
        while loop.time() < deadline:
            if store is None:
                events = await self.events(identity)
            else:
                changes = store.changes
                events = await store.read(lambda conn: event_acks(conn, identity, event_id))
            pending = [
                e
                for e in events
                if e["acked_at"] is None and (event_id is None or e["id"] == event_id)
            ]
            if not pending and (event_id is None or any(e["id"] == event_id for e in events)):
                return
            if store is None:
                await asyncio.sleep(0.02)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(store.changed(changes), deadline - loop.time())
        raise TimeoutError(f"events of {identity} not acknowledged within {timeout}s")

    async def transcript(self, conversation_id: str) -> list[dict[str, Any]]:
        """What the conversation's users saw."""
        messages: list[dict[str, Any]] = await self._json(
            "GET", f"/dev/conversations/{conversation_id}/messages"
        )
        return messages

    async def turns(self, conversation_id: str) -> list[dict[str, Any]]:
        """The stored turn records."""
        turns: list[dict[str, Any]] = await self._json(
            "GET", f"/dev/conversations/{conversation_id}/turns"
        )
        return turns

    async def dev(self, method: str, path: str, **kwargs: Any) -> Any:
        """Any other dev endpoint (``path`` under ``/dev``)."""
        return await self._json(method, f"/dev{path}", **kwargs)


def _store_of(app: Any) -> Store | None:
    """The store of a dev platform app (``None`` for an app wrapped in another)."""
    platform = _platform_of(app)
    return platform.store if platform is not None else None


def _platform_of(app: Any) -> Platform | None:
    """The state of a dev platform app (``None`` for an app wrapped in another)."""
    platform = getattr(getattr(app, "state", None), "platform", None)
    return platform if isinstance(platform, Platform) else None


@contextlib.asynccontextmanager
async def running_buddy(
    platform: LocalPlatform,
    blueprint: Blueprint,
    model: Model,
    token: str,
    *,
    on_event: Callable[[str, AgentEvent], None] | None = None,
    client: HttpPlatformClient | None = None,
    layer_model: Model | None = None,
) -> AsyncIterator[BuddyServer]:
    """Run ``blueprint`` with ``model`` against ``platform`` until the block ends.

    ``client`` replaces the default one (``HttpPlatformClient(platform.url, token)`` with
    quick reconnects), e.g. to try a shorter request timeout; ``layer_model`` is the
    conversation layers' model (automatic memory's extractor).
    """
    client = client or platform.buddy_client(token, backoff=Backoff(0.05, 0.5))
    buddy = Buddy(blueprint, client, model, layer_model=layer_model)
    server = BuddyServer(buddy, on_event=on_event)
    task = asyncio.create_task(server.run())
    connected = asyncio.create_task(client.connected.wait())
    await asyncio.wait((task, connected), timeout=5, return_when=asyncio.FIRST_COMPLETED)
    connected.cancel()
    if task.done():
        task.result()
    try:
        yield server
    finally:
        await server.stop()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
