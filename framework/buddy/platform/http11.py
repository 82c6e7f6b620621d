"""HTTP/1.1 to the platform without httpx's machinery around every request.

A served turn makes four requests to the platform (the conversation, its summary and its
turns when the conversation is built, then the commit), and through ``httpx.AsyncClient``
each cost about 1.5 ms of CPU on the bench machine: building and normalising the request,
auth and redirect handling, httpcore's pool with its anyio streams and cancel scopes —
83% of the buddy's CPU per turn (``bench/e2e_platform.py --profile buddy``). The HTTP/1.1
itself was never the cost: :class:`Http11Pool` keeps h11 (the sans-IO protocol library
httpcore sends through), one ``h11.Connection`` per kept-alive connection, and drops the
layers above it. h11 writes the request — the bytes httpx sends, since it is what writes
them for httpx too: the same headers in the same order, the request target as
:class:`httpx.URL` normalises it — and parses, frames and validates the answer
(``Content-Length``, chunked, or the end of the connection; 1xx answers skipped), and its
states say whether the connection can carry another request. What is left here is the
asyncio transport, the timeouts, the idle connections and their expiry. The buddy's CPU
per turn fell from 7.8 to 2.7 ms (docs/performance.md, end to end).

:class:`~buddy.platform.client.HttpPlatformClient` uses it for the client it makes itself,
and leaves to httpx a client its caller passes (tests, the in-process platform), a proxy
configured in the environment and a header value that is not plain ASCII. The answer is
identity or gzip/deflate-coded (``Accept-Encoding: gzip, deflate``; httpx would also offer
``br`` and ``zstd`` where their packages are installed), decoded by httpx's decoders.

Failures are httpx's exception classes, raised where httpx raises them, so the client
handles one tree: ``ConnectTimeout``/``ConnectError`` while connecting, ``WriteTimeout``
while sending, ``ReadTimeout``/``ReadError`` while reading, ``RemoteProtocolError`` (h11's
message) when the platform closed the connection before its whole answer or answered what
is not HTTP/1.1. A request is never sent twice here (the runtime decides what to try
again). Like httpx, each request logs ``HTTP Request: GET <url> "HTTP/1.1 200 OK"`` at INFO
on the ``httpx`` logger, where the runtime's log redaction looks for it.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import h11
import httpx

__all__ = ["Answer", "Http11Pool"]

_log = logging.getLogger("httpx")  # the line httpx logs for a request, logged alike

HEAD_MAX = 100 * 1024  # bytes of an answer's head at most (h11's limit as httpcore sets it)
TARGETS_KEPT = 512  # request targets kept normalised (paths with ids and keys vary)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_FRAMING = (b"content-length", b"transfer-encoding", b"content-encoding")
_CODED = {b"gzip", b"x-gzip", b"deflate"}  # the codings decoded (the ones asked for)


@dataclass(frozen=True, slots=True)
class Answer:
    """The platform's answer.

    Attributes:
        status_code: The status.
        reason: The reason phrase of the status line.
        headers: The header fields, names lower-cased, in order.
        content: The body, decoded when it was gzip- or deflate-coded.
        http_version: ``HTTP/1.1`` or ``HTTP/1.0``.
    """

    status_code: int
    reason: str
    headers: list[tuple[bytes, bytes]]
    content: bytes
    http_version: str = "HTTP/1.1"

    def response(self) -> httpx.Response:
        """The answer as an ``httpx.Response`` (for code that reads one: an error's body)."""
        headers = [(name, value) for name, value in self.headers if name not in _FRAMING]
        extensions = {
            "http_version": self.http_version.encode(),
            "reason_phrase": self.reason.encode(),
        }
        return httpx.Response(
            self.status_code, headers=headers, content=self.content, extensions=extensions
        )


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class _Connection(asyncio.Protocol):
    """One connection: its h11 state, fed what arrives as it arrives, and whether it ended."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=HEAD_MAX)
        self.transport: asyncio.Transport | None = None
        self.ended = False  # the platform closed its side, or the connection is gone
        self.error: Exception | None = None  # why the connection was lost, if it failed
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self._drained: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.h11.receive_data(data)
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def reusable(self, now: float, expiry: float) -> bool:
        """Open, both sides idle for h11, nothing unasked-for arrived, and not idle longer
        than ``expiry``."""
        return (
            not self.ended
            and self.transport is not None
            and not self.transport.is_closing()
            and self.h11.our_state is h11.IDLE
            and self.h11.their_state is h11.IDLE
            and not self.h11.trailing_data[0]
            and now - self.idle_since <= expiry
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    async def send(self, data: bytes, timeout: float) -> None:
        assert self.transport is not None
        self.transport.write(data)
        if not self._paused:
            return
        drained = self._drained = self.loop.create_future()
        timer = self.loop.call_later(timeout, _expire, drained)
        try:
            await drained
        except TimeoutError:
            raise httpx.WriteTimeout("the platform did not take the request in time") from None
        finally:
            timer.cancel()

    async def next_event(self, timeout: float) -> h11.Event:
        """h11's next event of the answer, waiting up to ``timeout`` for each part of it."""
        protocol = self.h11
        while True:
            try:
                event = protocol.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc)) from exc
            if event is not h11.NEED_DATA:
                assert event is not h11.PAUSED  # the answer is read up to its end, no further
                return event  # type: ignore[return-value]
            if self.ended:
                if isinstance(self.error, OSError):
                    raise httpx.ReadError(str(self.error) or type(self.error).__name__)
                if protocol.their_state is h11.SEND_RESPONSE:
                    # httpcore's words, rather than h11's about a ConnectionClosed event.
                    raise httpx.RemoteProtocolError(
                        "Server disconnected without sending a response."
                    )
                protocol.receive_data(b"")  # h11 ends a body framed by the close, or refuses
                continue
            waiter = self._waiter = self.loop.create_future()
            timer = self.loop.call_later(timeout, _expire, waiter)
            try:
                await waiter
            except TimeoutError:
                raise httpx.ReadTimeout("the platform did not answer in time") from None
            finally:
                timer.cancel()
                self._waiter = None


class Http11Pool:
    """Kept-alive HTTP/1.1 connections to one platform.

    The caller bounds the requests in flight (:class:`~buddy.platform.client.
    HttpPlatformClient` waits for one of its slots first): each takes an idle connection,
    the one used last first, or opens one; at most ``keep`` idle ones stay open, each for
    ``keepalive_expiry`` seconds (httpx's default).

    Args:
        base_url: The platform (``http://`` or ``https://``; certificates checked as httpx
            checks them, ``SSL_CERT_FILE``/``SSL_CERT_DIR`` included).
        timeout: Seconds to connect, to hand over a request, and for each wait for more of
            the answer (httpx's connect, write and read timeouts).
        keep: Idle connections kept at most.
    """

    def __init__(
        self, base_url: str, *, timeout: float, keep: int, keepalive_expiry: float = 5.0
    ) -> None:
        url = httpx.URL(base_url)
        if url.scheme not in _DEFAULT_PORTS or not url.host:
            raise ValueError(f"not an http(s) URL: {base_url}")
        self.scheme = url.scheme
        self.host = url.host
        self.port = url.port or _DEFAULT_PORTS[url.scheme]
        self._origin = f"{url.scheme}://{url.netloc.decode('ascii')}"
        # The fields every request starts with, as httpx sets them (h11 writes Host first).
        self._host = (b"Host", url.netloc)
        self._common = [
            (b"Accept", b"*/*"),
            (b"Accept-Encoding", b"gzip, deflate"),
            (b"Connection", b"keep-alive"),
            (b"User-Agent", f"python-httpx/{httpx.__version__}".encode("ascii")),
        ]
        self.timeout = timeout
        self.keep = keep
        self.keepalive_expiry = keepalive_expiry
        self._idle: list[_Connection] = []
        self._ssl: ssl.SSLContext | None = None
        self._targets: dict[Any, bytes] = {}
        self._closed = False

    def target(self, url: str, params: Mapping[str, Any] | None) -> bytes:
        """The request target (path and query) of ``url`` with ``params``, as httpx
        normalises and encodes it."""
        try:
            # With each value's type: 1, 1.0 and True are one key but three queries.
            key: Any = (url, tuple((k, type(v), v) for k, v in params.items())) if params else url
            found = self._targets.get(key)
        except TypeError:  # a value that is no key (a list of values): not kept
            return httpx.URL(url, params=params).raw_path
        if found is None:
            if len(self._targets) >= TARGETS_KEPT:
                self._targets.clear()
            found = self._targets[key] = httpx.URL(url, params=params).raw_path
        return found

    async def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        content: bytes | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Answer:
        """One exchange; ``headers`` after httpx's own (values plain ASCII, checked by the caller).

        Raises:
            httpx.HTTPError: The classes httpx raises for the same failure (module docstring).
        """
        target = self.target(url, params)
        # The fields in httpx's order: its automatic ones, its defaults, the caller's, and
        # the length of a body last (httpx's Request adds it when it encodes the content).
        fields = [self._host]
        if content is None and method in ("POST", "PUT", "PATCH"):
            fields.append((b"Content-Length", b"0"))
        fields.extend(self._common)
        fields.extend(
            (name.encode("ascii"), value.encode("ascii")) for name, value in headers.items()
        )
        if content:
            fields.append((b"Content-Length", b"%d" % len(content)))
        connection = await self._connection()
        protocol = connection.h11
        try:
            try:
                data = protocol.send(h11.Request(method=method, target=target, headers=fields))
                if content:
                    data += protocol.send(h11.Data(data=content))
                data += protocol.send(h11.EndOfMessage())
            except h11.LocalProtocolError as exc:
                raise httpx.LocalProtocolError(str(exc)) from exc
            await connection.send(data, self.timeout)
            answer = await self._answer(connection)
        except BaseException:
            connection.close()  # an exchange cut short leaves the connection unusable
            raise
        self._release(connection)
        if _log.isEnabledFor(logging.INFO):
            _log.info(
                'HTTP Request: %s %s "%s %d %s"',
                method,
                self._origin + target.decode("ascii"),
                answer.http_version,
                answer.status_code,
                answer.reason,
            )
        return answer

    async def _connection(self) -> _Connection:
        loop = asyncio.get_running_loop()
        now = loop.time()
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable(now, self.keepalive_expiry):
                return connection
            connection.close()
        connection = _Connection(loop)
        ssl_context = self._context() if self.scheme == "https" else None
        try:
            async with asyncio.timeout(self.timeout):
                await loop.create_connection(
                    lambda: connection,
                    self.host,
                    self.port,
                    ssl=ssl_context,
                    server_hostname=self.host if ssl_context is not None else None,
                )
        except TimeoutError:
            connection.close()
            raise httpx.ConnectTimeout("connecting to the platform timed out") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        return connection

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
            self._ssl.set_alpn_protocols(["http/1.1"])
        return self._ssl

    async def _answer(self, connection: _Connection) -> Answer:
        """The final answer, read to its end (h11 skips nothing: 1xx answers are skipped here)."""
        timeout = self.timeout
        head = await connection.next_event(timeout)
        while type(head) is h11.InformationalResponse:  # 103 Early Hints … come first
            head = await connection.next_event(timeout)
        assert type(head) is h11.Response  # what h11 yields before an answer's body
        chunks: list[bytes] = []
        while type(part := await connection.next_event(timeout)) is h11.Data:
            chunks.append(part.data)
        assert type(part) is h11.EndOfMessage  # h11 raises for an answer cut short
        fields = list(head.headers)
        content = b"".join(chunks)
        codings = [value for name, value in fields if name == b"content-encoding"]
        if content and any(coding in _CODED for value in codings for coding in _split(value)):
            # httpx's decoders, through the one public door to them.
            coded = httpx.Response(
                200, headers=[(b"content-encoding", value) for value in codings], content=content
            )
            content = coded.content
        return Answer(
            head.status_code,
            head.reason.decode("latin-1"),
            fields,
            content,
            "HTTP/" + head.http_version.decode("ascii"),
        )

    def _release(self, connection: _Connection) -> None:
        protocol = connection.h11
        # h11 says whether both sides may go on: not after ``Connection: close``, HTTP/1.0 or
        # an answer framed by the end of the connection.
        if (
            self._closed
            or len(self._idle) >= self.keep
            or connection.ended
            or protocol.our_state is not h11.DONE
            or protocol.their_state is not h11.DONE
        ):
            connection.close()
            return
        protocol.start_next_cycle()
        connection.idle_since = connection.loop.time()
        self._idle.append(connection)

    async def aclose(self) -> None:
        """Close the idle connections; one in use is closed when its exchange ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


def _split(value: bytes) -> list[bytes]:
    return [item.strip().lower() for item in value.split(b",")]
