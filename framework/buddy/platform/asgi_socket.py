"""A websocket to an ASGI app in this process: the gateway without a socket.

:func:`connect` speaks the ASGI websocket protocol to the app directly and answers a
connection with what :class:`~buddy.platform.client.HttpPlatformClient` uses of a
``websockets`` client connection — iterating the text messages, ``send``, ``close``,
``close_code`` and ``close_reason`` — with the same close semantics: iteration ends on a
normal close, and raises :class:`websockets.ConnectionClosedError` on any other (so the
client's reconnect and refusal rules apply unchanged). ``buddy test`` runs its dev
platform so by default: no port, no uvicorn, nothing to wait for.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import websockets
from websockets.frames import Close

from buddy.errors import PlatformError

__all__ = ["AsgiWebSocket", "connect"]

_NORMAL = (1000, 1001)


class AsgiWebSocket:
    """One connection to ``app`` at ``path``."""

    def __init__(self, app: Any, path: str, headers: Mapping[str, str]) -> None:
        self._app = app
        self._scope = {
            "type": "websocket",
            "asgi": {"version": "3.0"},
            "scheme": "ws",
            "http_version": "1.1",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [
                (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()
            ],
            "client": ("127.0.0.1", 0),
            "server": ("platform", 80),
            "subprotocols": [],
            "state": {},
        }
        self._to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.close_code: int | None = None
        self.close_reason = ""

    async def _run(self) -> None:
        try:
            await self._app(self._scope, self._to_app.get, self._from_app.put)
        finally:  # the app is done: the connection is over
            await self._from_app.put({"type": "websocket.close", "code": 1006, "reason": ""})

    async def open(self) -> None:
        """Connect; the app accepts, or the connection is refused.

        Raises:
            PlatformError: The app closed it before accepting (an unknown token).
        """
        self._task = asyncio.create_task(self._run())
        await self._to_app.put({"type": "websocket.connect"})
        first = await self._from_app.get()
        if first["type"] != "websocket.accept":
            await self._stop()
            raise PlatformError(401, "the platform refused the token")

    def __aiter__(self) -> AsyncIterator[str]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[str]:
        while self.close_code is None:
            message = await self._from_app.get()
            if message["type"] == "websocket.send":
                yield str(
                    message.get("text")
                    if message.get("text") is not None
                    else message["bytes"].decode()
                )
            elif message["type"] == "websocket.close":
                self.close_code = int(message.get("code", 1000))
                self.close_reason = str(message.get("reason") or "")
        if self.close_code not in _NORMAL:
            raise websockets.ConnectionClosedError(Close(self.close_code, self.close_reason), None)

    async def send(self, text: str) -> None:
        """Send one text message to the app.

        Raises:
            websockets.ConnectionClosedOK: The connection is closed.
        """
        if self.close_code is not None:
            raise websockets.ConnectionClosedOK(Close(self.close_code, self.close_reason), None)
        await self._to_app.put({"type": "websocket.receive", "text": text})

    async def close(self) -> None:
        """Close it (the app sees a disconnect) and wait for the app to end."""
        if self.close_code is None:
            self.close_code = 1000
        await self._stop()

    async def _stop(self) -> None:
        await self._to_app.put({"type": "websocket.disconnect", "code": 1000})
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            except TimeoutError:
                self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


@contextlib.asynccontextmanager
async def connect(app: Any, path: str, headers: Mapping[str, str]) -> AsyncIterator[AsgiWebSocket]:
    """A connection to ``app`` at ``path``, closed when the block ends."""
    socket = AsgiWebSocket(app, path, headers)
    await socket.open()
    try:
        yield socket
    finally:
        await socket.close()
