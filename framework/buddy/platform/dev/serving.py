"""Serving the dev platform with uvicorn: read timeouts that close slow clients.

uvicorn bounds only the idle time between requests (``timeout_keep_alive``). A client
that connects and sends nothing, or sends its request a byte at a time, holds its
connection for ever, and a few hundred of them hold every descriptor the process has
(slow-loris). :func:`guarded_h11` is uvicorn's h11 protocol with two deadlines:

- **header timeout** — from the moment a connection opens, or the first byte of the
  next request on a kept-alive one, until its request line and headers are complete;
  a connection that misses it answers ``408`` and is closed;
- **body timeout** — from the end of the headers until the end of the body; a
  connection that misses it is closed (the handler sees the client disconnect).

The deadlines are totals, not idle gaps: a byte every second does not keep a request
alive. Once a request is read, the handler takes as long as it takes; a websocket
upgrade leaves both behind.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["BODY_TIMEOUT", "HEADER_TIMEOUT", "guarded_h11", "server_config"]

HEADER_TIMEOUT = 10.0  # seconds for a request line and its headers
BODY_TIMEOUT = 30.0  # seconds for a body (8 MiB at most) after its headers


def _timed_out(what: str, seconds: float) -> bytes:
    body = json.dumps(
        {
            "status": 408,
            "code": "request_timeout",
            "reason": f"the request's {what} did not arrive within {seconds:g}s",
        }
    ).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    return head + body


class _Guarded(H11Protocol):
    header_timeout = HEADER_TIMEOUT
    body_timeout = BODY_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._phase = ""  # "headers", "body" or "" (nothing being read)
        self._upgraded = False

    def _arm(self, phase: str) -> None:
        self._disarm()
        seconds = self.header_timeout if phase == "headers" else self.body_timeout
        self._phase = phase
        self._deadline = self.loop.call_later(seconds, self._expire, phase)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        self._phase = ""

    def _expire(self, phase: str) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if phase == "headers":  # nothing was answered yet: say why before closing
            self.transport.write(_timed_out("line and headers", self.header_timeout))
        self.transport.close()

    def _follow(self) -> None:
        """Arm, move or drop the deadline for what the connection is reading now."""
        state = self.conn.their_state
        if self._upgraded:
            self._disarm()
        elif state is h11.IDLE:
            if self._phase != "headers" and (self.cycle is None or self.cycle.response_complete):
                self._arm("headers")
        elif state is h11.SEND_BODY:
            if self._phase != "body":
                self._arm("body")
        else:  # the request is read (or the connection is done): the handler's time
            self._disarm()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm("headers")

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self.transport.is_closing():
            self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Idle time until the next request is timeout_keep_alive's; its first byte arms
        # the header deadline again (data_received → _follow).
        if self.conn.their_state is not h11.IDLE:
            self._follow()
        else:
            self._disarm()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._upgraded = True  # the websocket protocol takes the connection over
        self._disarm()
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def guarded_h11(
    header_timeout: float = HEADER_TIMEOUT, body_timeout: float = BODY_TIMEOUT
) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the given header and body read timeouts (seconds)."""
    return type(
        "GuardedH11Protocol",
        (_Guarded,),
        {"header_timeout": header_timeout, "body_timeout": body_timeout},
    )


def server_config(
    app: Any,
    host: str,
    port: int,
    *,
    header_timeout: float = HEADER_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    **options: Any,
) -> uvicorn.Config:
    """A uvicorn configuration serving ``app`` with the read timeouts of this module."""
    options.setdefault("log_level", "warning")
    return uvicorn.Config(
        app, host=host, port=port, http=guarded_h11(header_timeout, body_timeout), **options
    )
