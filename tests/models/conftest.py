"""Fixtures for the model providers: wire fixtures, scripted transports, a fake sleep,
and a fake provider on a real loopback socket that can cut or stall a stream."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest

from buddy.models.base import Message, ModelRequest, ToolCall, ToolDefinition

FIXTURES = Path(__file__).parent / "fixtures"

REQUEST = ModelRequest(
    system="你是小图，一个温和的陪伴者。",
    messages=(
        Message("user", "记住我的生日是3月5日"),
        Message(
            "assistant",
            "",
            tool_calls=(ToolCall("call_1", "memory_write", '{"key":"生日","value":"3月5日"}'),),
        ),
        Message("tool", "已记住。", tool_call_id="call_1", name="memory_write"),
        Message("assistant", "记住啦！"),
        Message("user", "你好"),
    ),
    tools=(
        ToolDefinition(
            "memory_write",
            "Remember something about the user.",
            {
                "type": "object",
                "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
                "required": ["key", "value"],
            },
        ),
    ),
)


def fixture_text(name: str) -> str:
    """A wire fixture's text, e.g. ``openai/plain.json``."""
    return (FIXTURES / name).read_text(encoding="utf-8")


def fixture_json(name: str) -> Any:
    """A JSON wire fixture, decoded."""
    return json.loads(fixture_text(name))


def sse(name: str, *, status: int = 200, **headers: str) -> httpx.Response:
    """A response streaming an SSE fixture."""
    return httpx.Response(
        status,
        headers={"content-type": "text/event-stream", **headers},
        content=fixture_text(name).encode(),
    )


def reply(name: str, *, status: int = 200, headers: dict[str, str] | None = None) -> httpx.Response:
    """A JSON response with a fixture's body."""
    return httpx.Response(
        status,
        headers={"content-type": "application/json", **(headers or {})},
        content=fixture_text(name).encode(),
    )


Reply = httpx.Response | Exception | Callable[[httpx.Request], Any]


class Wire:
    """An ``httpx.MockTransport`` answering scripted replies in order, recording requests.

    A reply is a response, an exception to raise (``httpx.ReadTimeout`` …), or a
    function of the request returning a response (it may be ``async``).
    """

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []
        self.transport = httpx.MockTransport(self._handle)

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"unexpected request #{len(self.requests)} to {request.url}")
        answer = self.replies.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, httpx.Response):
            return answer
        result = answer(request)
        if asyncio.iscoroutine(result):
            result = await result
        assert isinstance(result, httpx.Response)
        return result

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies sent, in order."""
        return [json.loads(r.content) for r in self.requests]


@pytest.fixture
async def client() -> AsyncIterator[Callable[[Wire], httpx.AsyncClient]]:
    """Make clients over a :class:`Wire`; all are closed after the test."""
    clients: list[httpx.AsyncClient] = []

    def make(wire: Wire) -> httpx.AsyncClient:
        clients.append(httpx.AsyncClient(transport=wire.transport))
        return clients[-1]

    yield make
    for made in clients:
        await made.aclose()


@dataclass
class FakeSleep:
    """Stands in for ``asyncio.sleep``: records each delay and returns at once."""

    delays: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleep() -> FakeSleep:
    return FakeSleep()


class BrokenStream(httpx.AsyncByteStream):
    """A response body that sends some bytes, then fails like a reset connection."""

    def __init__(self, head: bytes, error: Exception | None = None) -> None:
        self.head = head
        self.error = error or httpx.ReadError("connection reset by peer")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        raise self.error


class StallingStream(httpx.AsyncByteStream):
    """A response body that sends some bytes, then nothing, ever."""

    def __init__(self, head: bytes) -> None:
        self.head = head

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        await asyncio.Event().wait()


# --- A fake provider on a real socket -------------------------------------------------


@dataclass
class Scripted:
    """One answer of :class:`FakeProvider`.

    Attributes:
        chunks: Pieces of the body, each sent as its own HTTP chunk (split SSE lines
            across them to test reassembly).
        end: ``complete`` ends the chunked body properly; ``cut`` closes the
            connection mid-body; ``stall`` keeps it open and silent.
        status: The HTTP status.
        headers: Extra response headers.
    """

    chunks: list[bytes]
    end: Literal["complete", "cut", "stall"] = "complete"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    """A request the fake provider got."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeProvider:
    """An OpenAI- (or Anthropic-) compatible provider speaking HTTP/1.1 on loopback.

    It answers scripted replies in order, with chunked transfer encoding, so a test can
    cut a stream mid-way or leave it hanging over a real TCP connection.
    """

    def __init__(self) -> None:
        self.script: list[Scripted] = []
        self.received: list[Received] = []
        self.url = ""
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def answer(self, *scripted: Scripted) -> None:
        self.script.extend(scripted)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._exchange(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            self._tasks.discard(task)

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        request_line, *lines = head.rstrip("\r\n").split("\r\n")
        method, path, _ = request_line.split(" ", 2)
        headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines)
        }
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.received.append(Received(method, path, headers, json.loads(body or b"null")))
        scripted = self.script.pop(0)
        response_headers = {
            "content-type": "text/event-stream",
            "transfer-encoding": "chunked",
            "connection": "close",
            **scripted.headers,
        }
        writer.write(
            f"HTTP/1.1 {scripted.status} Scripted\r\n".encode()
            + "".join(f"{k}: {v}\r\n" for k, v in response_headers.items()).encode()
            + b"\r\n"
        )
        for chunk in scripted.chunks:
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
            await asyncio.sleep(0.005)  # separate TCP segments, as a real stream has
        if scripted.end == "complete":
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        elif scripted.end == "stall":
            await asyncio.Event().wait()
        # "cut": close without the final chunk — the connection drops mid-body.


@pytest.fixture
async def provider() -> AsyncIterator[FakeProvider]:
    """A fake provider on a free loopback port."""
    fake = FakeProvider()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


def pieces(text: str, size: int) -> list[bytes]:
    """``text`` encoded and cut every ``size`` bytes — mid-line, mid-character even."""
    data = text.encode()
    return [data[i : i + size] for i in range(0, len(data), size)]


def events_of(kind: type, events: Iterable[object]) -> list[Any]:
    """The events of one type, in order."""
    return [e for e in events if isinstance(e, kind)]


async def drain(events: AsyncIterator[Any], into: list[Any]) -> None:
    """Append every event of a stream to ``into`` (which keeps them if the stream fails)."""
    async for event in events:
        into.append(event)
