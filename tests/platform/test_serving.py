"""Read timeouts of the served dev platform: slow clients are closed, timely ones answered.

Real sockets on loopback, a bounded number of them, and timeouts of a fraction of a
second so the whole module takes a few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import uvicorn
import websockets

from buddy.platform.dev.app import create_app
from buddy.platform.dev.serving import BODY_TIMEOUT, HEADER_TIMEOUT, server_config
from tests.platform.conftest import ADMIN, free_port

pytestmark = pytest.mark.anyio

TIMEOUT = 0.5  # both the header and the body timeout, in these tests
REQUEST = b"GET /internal/v1/memory HTTP/1.1\r\nHost: platform\r\nX-Conversation-Id: c\r\n\r\n"


@contextlib.asynccontextmanager
async def _served(tmp_path: Path, timeout: float) -> AsyncIterator[int]:
    """The dev platform served with ``timeout`` as both read timeouts; yields its port."""
    number = free_port()
    app = create_app(str(tmp_path / "platform.db"), admin_token=ADMIN)
    config = server_config(
        app, "127.0.0.1", number, header_timeout=timeout, body_timeout=timeout, lifespan="on"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    yield number
    server.should_exit = True
    await task


@pytest.fixture
async def port(tmp_path: Path) -> AsyncIterator[int]:
    """The dev platform served with short read timeouts; yields its port."""
    async with _served(tmp_path, TIMEOUT) as number:
        yield number


async def _dribble(port: int, data: bytes, gap: float) -> tuple[bytes, float]:
    """Send ``data`` a byte at a time, ``gap`` seconds apart, then read until the server
    closes; answers what it sent back and when it closed (seconds after connecting)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start = time.monotonic()

    async def send() -> None:
        for i in range(len(data)):
            writer.write(data[i : i + 1])
            await writer.drain()
            await asyncio.sleep(gap)

    sending = asyncio.create_task(send())
    try:
        answer = await asyncio.wait_for(reader.read(), 10)  # until EOF
    finally:
        sending.cancel()
        writer.close()
    return answer, time.monotonic() - start


def test_defaults_are_documented() -> None:
    doc = Path(__file__).parents[2].joinpath("docs", "protocol.md").read_text()
    assert f"{HEADER_TIMEOUT:g} s" in doc
    assert f"{BODY_TIMEOUT:g} s" in doc


async def test_many_slow_loris_connections_are_all_closed(port: int) -> None:
    # 40 clients each sending their headers a byte every 50 ms would need ~4 s each.
    results = await asyncio.gather(*(_dribble(port, REQUEST, 0.05) for _ in range(40)))
    for answer, closed_after in results:
        assert closed_after < TIMEOUT + 1.5
        assert answer.startswith(b"HTTP/1.1 408 ")
        body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert body["code"] == "request_timeout"
        assert "headers" in body["reason"]


async def test_a_connection_that_sends_nothing_is_closed(port: int) -> None:
    answer, closed_after = await _dribble(port, b"", 0)
    assert closed_after < TIMEOUT + 1.5
    assert answer.startswith(b"HTTP/1.1 408 ")


async def test_headers_within_the_timeout_are_answered(tmp_path: Path) -> None:
    # Slow — the headers a byte at a time over about 0.3 s — but well within the time
    # allowed: answered (401: no token). The timeout is 10× the dribble's length, so a
    # loaded machine (the suite's other workers) stretching the sleeps cannot reach it.
    gap = 0.3 / len(REQUEST)
    async with _served(tmp_path, 3.0) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for i in range(len(REQUEST)):
            writer.write(REQUEST[i : i + 1])
            await writer.drain()
            await asyncio.sleep(gap)
        status = await asyncio.wait_for(reader.readline(), 5)
        writer.close()
    assert status.startswith(b"HTTP/1.1 401 ")


def _put(body_size: int) -> bytes:
    return (
        b"PUT /internal/v1/memory/k HTTP/1.1\r\nHost: platform\r\nX-Conversation-Id: c\r\n"
        b"Content-Type: application/json\r\nContent-Length: "
        + str(body_size).encode()
        + b"\r\n\r\n"
    )


async def test_a_slow_body_is_closed(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start = time.monotonic()
    writer.write(_put(100))  # headers at once, then the body a byte every 50 ms (5 s)
    await writer.drain()

    async def send() -> None:
        for _ in range(100):
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.05)

    sending = asyncio.create_task(send())
    try:
        await asyncio.wait_for(reader.read(), 10)
    except ConnectionResetError:
        # Closed while a byte of ours was still unread: the kernel resets instead of
        # ending the stream — closed either way, which is what this test is about.
        pass
    finally:
        sending.cancel()
        writer.close()
    assert time.monotonic() - start < TIMEOUT + 1.5


async def test_a_body_within_the_timeout_is_answered(port: int) -> None:
    body = b'{"text": "x"}'
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_put(len(body)))
    for i in range(len(body)):  # about 0.3 s of the 0.5 allowed
        writer.write(body[i : i + 1])
        await writer.drain()
        await asyncio.sleep(TIMEOUT * 0.6 / len(body))
    status = await asyncio.wait_for(reader.readline(), 5)
    writer.close()
    assert status.startswith(b"HTTP/1.1 401 ")  # read in full, then refused for the token


async def test_kept_alive_connections_get_a_fresh_deadline_per_request(port: int) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        for _ in range(3):  # one connection, spread over more than the timeout
            response = await http.get("/internal/v1/memory")
            assert response.status_code == 401
            await asyncio.sleep(TIMEOUT * 0.6)


async def test_a_websocket_outlives_the_read_timeouts(port: int) -> None:
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=url) as http:
        created = (
            await http.post(
                "/dev/buddies",
                headers={"Authorization": f"Bearer {ADMIN}"},
                json={"buddy_id": "slow"},
            )
        ).json()
    async with websockets.connect(
        f"ws://127.0.0.1:{port}/internal/v1/gateway",
        additional_headers={"Authorization": f"Bearer {created['token']}"},
    ) as socket:
        hello = json.loads(await asyncio.wait_for(socket.recv(), 5))
        assert hello["type"] == "hello"
        await asyncio.sleep(TIMEOUT * 3)
        await socket.ping()  # still open
