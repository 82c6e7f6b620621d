"""The HTTP + websocket transport of :class:`~buddy.platform.api.PlatformClient` for the
buddy platform protocol (docs/protocol.md).

Every failure of a call raises :class:`~buddy.errors.PlatformError` with the HTTP status
and the platform's reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import websockets

from buddy.errors import PlatformError, SupersededError
from buddy.platform.api import API_ROOT, Json, PlatformClient
from buddy.platform.http11 import Answer, Http11Pool
from buddy.platform.protocol.events import SUPERSEDED_CLOSE_CODE, Event

__all__ = ["Backoff", "HttpPlatformClient", "PlatformClient", "refusal"]

log = logging.getLogger("buddy.platform.client")


class Backoff:
    """Exponential backoff with full jitter: ``uniform(0, min(cap, base * 2**attempt))``."""

    def __init__(
        self, base: float = 0.2, cap: float = 10.0, rng: random.Random | None = None
    ) -> None:
        self.base = base
        self.cap = cap
        self.attempt = 0
        self.rng = rng or random.Random()

    def next(self) -> float:
        """The next delay in seconds."""
        delay = self.rng.uniform(0, min(self.cap, self.base * 2**self.attempt))
        self.attempt += 1
        return delay

    def reset(self) -> None:
        """After a success: start again from the smallest delay."""
        self.attempt = 0


class HttpPlatformClient(PlatformClient):
    """The buddy platform protocol over HTTP (:class:`~buddy.platform.http11.Http11Pool`,
    or httpx) and a websocket gateway (websockets).

    Args:
        base_url: The platform, e.g. ``http://127.0.0.1:8700``.
        token: The buddy's bearer token (a dev token acts as ``<buddyId>-dev``).
        http: An ``httpx.AsyncClient`` to use (tests pass one with an ASGI transport);
            ``timeout``, ``connections`` and ``pool_timeout`` apply only to the one made
            when none is given.
        timeout: Seconds the platform has to accept a connection and to answer a request.
        connections: Requests in flight to the platform at most (and HTTP connections
            open to it), shared by every conversation; the others wait their turn. Few
            is fast: httpcore's pool looks at every connection for every connection on
            each request, so 100 connections cost more CPU than the turn itself (bench:
            1,000 concurrent turns took 30 s with 100, 12 s with 20). Raise it for a
            platform far away, where requests spend their time in flight.
        pool_timeout: Seconds a request may wait for a free connection (``None``: no
            limit). Separate from ``timeout``: the wait says how busy this process is,
            not how slow the platform is, and every request holding a connection is
            itself bounded by ``timeout``, so the queue always moves.
        backoff: Reconnect delays of the gateway.
        remember: How many event ids are kept to drop redeliveries.
        gateway: Opens the gateway's websocket: ``(url, headers) -> async context
            manager`` of a connection (default: ``websockets.connect``; tests and
            ``buddy test`` pass :func:`buddy.platform.asgi_socket.connect` for a platform
            in this process).
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        http: httpx.AsyncClient | None = None,
        timeout: float = 15.0,
        connections: int = 16,
        pool_timeout: float | None = None,
        backoff: Backoff | None = None,
        remember: int = 10_000,
        gateway: Gateway | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._gateway = gateway or _websocket
        self._root = f"{self.base_url}{API_ROOT}"
        self.token = token
        self._own_http = http is None
        # The requests of the client made here go through Http11Pool (httpx's machinery
        # per request was most of a served turn's CPU, see buddy.platform.http11), unless a
        # proxy is configured, which httpx honours; httpx carries what the pool does not.
        self._lean = (
            Http11Pool(self.base_url, timeout=timeout, keep=connections)
            if http is None and not _proxied()
            else None
        )
        self._httpx = http
        self._timeout = timeout
        self._connections = connections
        self._pool_timeout = pool_timeout
        if http is None and self._lean is None:  # made now, as before: it reads the proxy
            self._httpx = self._made_http()
        # Requests wait for a connection here rather than inside httpx: httpcore's pool
        # looks at every queued request on each of its operations, so thousands of requests
        # queued there cost quadratic CPU (most of a C=2000 run's time, profiled).
        self._slots = asyncio.Semaphore(connections)
        self.backoff = backoff or Backoff()
        # Event id → whether it was acknowledged; the ids not yet acknowledged are the
        # ones being processed here.
        self._seen: OrderedDict[str, bool] = OrderedDict()
        self._remember = remember
        self._socket: Any = None  # a websockets ClientConnection, or an AsgiWebSocket
        self._unsent_acks: list[str] = []
        self._closed = False
        self.identity = ""
        self.connections = 0  # how many times the gateway said hello (reconnects + 1)
        self.connected = asyncio.Event()  # set at the gateway's first hello

    # ------------------------------------------------------------ HTTP

    async def request(
        self,
        method: str,
        path: str,
        *,
        cid: str | None = None,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        missing_ok: bool = False,
    ) -> Json:
        headers = {"Authorization": f"Bearer {self.token}"}
        if cid is not None:
            headers["X-Conversation-Id"] = cid
        if self._pool_timeout is None or not self._slots.locked():
            await self._slots.acquire()  # no wait to bound
        else:
            try:
                async with asyncio.timeout(self._pool_timeout):
                    await self._slots.acquire()
            except TimeoutError as exc:
                raise PlatformError(
                    0, f"no free connection to the platform within {self._pool_timeout:g}s"
                ) from exc
        content: bytes | None = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            content = _encode(body)
        response: httpx.Response | Answer
        try:
            url = f"{self._root}/{path}" if path else self._root
            lean = self._lean
            if lean is not None and all(_plain(value) for value in headers.values()):
                response = await lean.request(method, url, headers, content, params)
            else:  # httpx refuses (or encodes) such a header value as it always did
                response = await self._send(method, url, headers, content, params)
        except httpx.TimeoutException as exc:
            raise PlatformError(
                0, f"the platform did not answer in time ({type(exc).__name__})"
            ) from exc
        except httpx.HTTPError as exc:
            # Every transport failure (refused, reset, a kept-alive connection closed just as
            # it was reused) is status 0, which the runtime treats as transient.
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if isinstance(exc, httpx.ConnectError):
                raise PlatformError(0, f"the platform is unreachable ({detail})") from exc
            raise PlatformError(0, f"the request to the platform failed ({detail})") from exc
        finally:
            self._slots.release()
        if response.status_code == 404 and missing_ok:
            return None
        if response.status_code >= 400:
            raise refusal(response if isinstance(response, httpx.Response) else response.response())
        if response.status_code == 204 or not response.content:
            return None
        try:
            return json.loads(response.content)  # what httpx.Response.json() does
        except ValueError as exc:
            raise PlatformError(
                response.status_code, "the platform answered with invalid JSON"
            ) from exc

    async def _send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        content: bytes | None,
        params: Mapping[str, Any] | None,
    ) -> httpx.Response | Answer:
        """One HTTP exchange with the platform through httpx (a subclass may carry it
        otherwise: the in-process platform hands it to its app directly)."""
        return await self._http.request(
            method, url, headers=headers, content=content, params=params
        )

    @property
    def _http(self) -> httpx.AsyncClient:
        """The httpx client: the caller's, or one made on first use."""
        if self._httpx is None:
            self._httpx = self._made_http()
        return self._httpx

    def _made_http(self) -> httpx.AsyncClient:
        connections = self._connections
        return httpx.AsyncClient(
            base_url=self.base_url,
            timeout=httpx.Timeout(self._timeout, pool=self._pool_timeout),
            # Every connection may stay open between requests: a burst of conversations
            # otherwise closes and reopens most of them on each request.
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        )

    # ------------------------------------------------------------ gateway

    def _gateway_url(self) -> str:
        scheme, rest = self.base_url.split("://", 1)
        return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/internal/v1/gateway"

    def forget(self, event_id: str) -> None:
        self._seen.pop(event_id, None)

    def _fresh(self, event_id: str) -> bool:
        if event_id in self._seen:
            return False
        self._seen[event_id] = False
        while len(self._seen) > self._remember:
            self._seen.popitem(last=False)
        return True

    async def events(self) -> AsyncIterator[Event]:
        """Connect, and yield each event once — reconnecting after drops, never after supersede.

        Raises:
            SupersededError: A newer connection of the same identity took over (logged as ERROR).
            PlatformError: The token was refused.
        """
        while not self._closed:
            try:
                async with self._gateway(
                    self._gateway_url(), {"Authorization": f"Bearer {self.token}"}
                ) as socket:
                    self._socket = socket
                    async for event in self._read(socket):
                        yield event
            except SupersededError as exc:
                log.error(
                    "buddy %s stops: %s; not reconnecting", self.identity or "process", exc.reason
                )
                raise
            except websockets.InvalidStatus as exc:
                if exc.response.status_code in (401, 403):
                    raise PlatformError(401, "the platform refused the token") from exc
            except (
                OSError,
                websockets.ConnectionClosed,
                websockets.InvalidHandshake,
                TimeoutError,
            ) as exc:
                if (
                    isinstance(exc, websockets.ConnectionClosed)
                    and exc.rcvd
                    and exc.rcvd.code == 4401
                ):
                    raise PlatformError(401, "the platform refused the token") from exc
            finally:
                self._socket = None
            if self._closed:
                return
            delay = self.backoff.next()
            log.warning("gateway connection lost; reconnecting in %.2fs", delay)
            await asyncio.sleep(delay)

    async def _read(self, socket: Any) -> AsyncIterator[Event]:
        async for raw in socket:
            message = json.loads(raw)
            kind = message.get("type")
            if kind == "hello":
                self.identity = message.get("identity", "")
                self.connections += 1
                self.connected.set()
                self.backoff.reset()
                await self._flush_acks(socket)
            elif kind == "supersede":
                raise SupersededError(message.get("reason", "another connection took over"))
            elif kind == "event":
                try:
                    event = Event.model_validate(message.get("event"))
                except ValueError as exc:  # pydantic's ValidationError
                    await self._malformed(message.get("event"), exc)
                    continue
                if self._fresh(event.id):
                    yield event
                elif self._seen.get(event.id):
                    await self.ack(event.id)  # processed before the drop: just confirm again
                # Otherwise its turn is still running here, and acknowledges it once committed.
        if socket.close_code == SUPERSEDED_CLOSE_CODE:
            raise SupersededError(socket.close_reason or "another connection took over")

    async def _malformed(self, raw: Any, exc: ValueError) -> None:
        """An event the wire model refuses (a type that is no type name, a field missing):
        no buddy can ever handle it, so it is logged, acknowledged when it has an id (else
        it would be delivered again on every connection) and skipped — never raised, which
        would stop the process at every start."""
        from pydantic import ValidationError

        event_id = raw.get("id") if isinstance(raw, dict) else None
        # Where and what, never the values (a payload may carry what a user wrote).
        problems = (
            "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'event'}: {e['msg']}"
                for e in exc.errors(include_input=False, include_url=False)
            )
            if isinstance(exc, ValidationError)
            else type(exc).__name__
        )
        log.error(
            "the platform sent a malformed event %s (%s); %s",
            event_id if isinstance(event_id, str) else "without an id",
            problems,
            "acknowledged and skipped" if isinstance(event_id, str) else "skipped",
        )
        if isinstance(event_id, str):
            await self.ack(event_id)

    async def _flush_acks(self, socket: Any) -> None:
        pending, self._unsent_acks = self._unsent_acks, []
        for event_id in pending:
            await socket.send(json.dumps({"type": "ack", "event_id": event_id}))

    async def ack(self, event_id: str) -> None:
        if event_id in self._seen:
            self._seen[event_id] = True
        socket = self._socket
        if socket is None:
            self._unsent_acks.append(event_id)
            return
        try:
            await socket.send(json.dumps({"type": "ack", "event_id": event_id}))
        except websockets.ConnectionClosed:
            self._unsent_acks.append(event_id)  # sent after the reconnect

    async def close(self) -> None:
        self._closed = True
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await self._socket.close()
        if self._lean is not None:
            await self._lean.aclose()
        if self._own_http and self._httpx is not None:
            await self._httpx.aclose()


#: Opens a gateway connection: ``(url, headers) -> async context manager`` of it.
Gateway = Callable[[str, Mapping[str, str]], AbstractAsyncContextManager[Any]]


def _websocket(url: str, headers: Mapping[str, str]) -> AbstractAsyncContextManager[Any]:
    return websockets.connect(
        url, additional_headers=dict(headers), open_timeout=10, max_size=8 * 1024 * 1024
    )


def _proxied() -> bool:
    """Whether the environment configures a proxy (``HTTP_PROXY`` …), as httpx reads it."""
    from urllib.request import getproxies

    return any(scheme in getproxies() for scheme in ("http", "https", "all"))


def _plain(value: str) -> bool:
    """A header value that goes on the wire as it is: printable ASCII, no outer spaces."""
    return value.isascii() and value.isprintable() and value == value.strip()


def _encode(body: Mapping[str, Any]) -> bytes:
    """``body`` as compact UTF-8 JSON. Text with a lone surrogate cannot be UTF-8: it is
    sent escaped (``\\ud800``), for the platform to refuse with its reason."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("ascii")


def refusal(response: httpx.Response) -> PlatformError:
    """The :class:`PlatformError` for a platform's error answer: its status, its reason
    (or the body's text, cut at 500 characters, when it is not the protocol's error body)
    and its code."""
    try:
        body = response.json()
    except ValueError:
        return PlatformError(response.status_code, response.text[:500] or response.reason_phrase)
    if not isinstance(body, dict):
        return PlatformError(response.status_code, json.dumps(body, ensure_ascii=False)[:500])
    reason, code = body.get("reason"), body.get("code")
    return PlatformError(
        response.status_code,
        reason if isinstance(reason, str) else json.dumps(body, ensure_ascii=False)[:500],
        code=code if isinstance(code, str) else "",
    )
