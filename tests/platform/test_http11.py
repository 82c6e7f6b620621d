"""The client's own HTTP/1.1 pool against a raw server on loopback: the bytes httpx would
send, every framing of an answer, kept-alive connections, and each failure as the error
httpx raised for it."""

from __future__ import annotations

import asyncio
import gzip
import logging
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx
import pytest

from buddy.errors import PlatformError
from buddy.platform.client import HttpPlatformClient
from buddy.platform.http11 import Http11Pool

pytestmark = pytest.mark.anyio

OK = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{"ok":true}'

#: Answers a raw request (its head and body) with raw bytes; ``None`` closes the connection.
Answer = Callable[[bytes], bytes | None]


@dataclass
class Raw:
    """A loopback server that records what arrives and answers with ``answer``."""

    answer: Answer = lambda request: OK
    close_after: bool = False  # close the connection after each answer
    url: str = ""
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                answer = self.answer(request)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def raw() -> AsyncIterator[Raw]:
    server = Raw()
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    server.url = f"http://127.0.0.1:{port}"
    yield server
    for writer in server.writers:
        writer.close()
    listening.close()


CALLS = [
    ("GET", "conversation", {"cid": "conv_1"}),
    ("POST", "conversation/turns", {"cid": "conv_1", "body": {"reply": "好的", "n": 1.5}}),
    ("GET", "conversation/turns", {"cid": "conv_1", "params": {"after": 0.0, "limit": 1000}}),
    ("PUT", "memory/口味 x", {"cid": "conv_1", "body": {"text": "爱吃辣"}}),
    ("DELETE", "memory/%E5%8F%A3", {"cid": "conv_1"}),
    ("POST", "widget-types", {}),
    ("GET", "data", {"params": {"q": "a b/é", "none": None, "flag": False}}),
]


@pytest.mark.parametrize(
    ("method", "path", "options"), CALLS, ids=[c[0] + " " + c[1] for c in CALLS]
)
async def test_the_request_is_the_one_httpx_sends(
    raw: Raw, method: str, path: str, options: dict[str, object]
) -> None:
    lean = HttpPlatformClient(raw.url, "tok")
    assert lean._lean is not None
    async with httpx.AsyncClient() as http:
        through_httpx = HttpPlatformClient(raw.url, "tok", http=http)
        await lean.request(method, path, **options)  # type: ignore[arg-type]
        await through_httpx.request(method, path, **options)  # type: ignore[arg-type]
    await lean.close()
    mine, theirs = raw.requests
    assert mine == theirs


async def test_connections_are_kept_alive_and_reused(raw: Raw) -> None:
    client = HttpPlatformClient(raw.url, "t")
    for _ in range(5):
        assert await client.conversation_info("c") == {"ok": True}
    assert raw.connections == 1
    await asyncio.gather(*(client.conversation_info("c") for _ in range(4)))
    assert raw.connections == 4  # four at once: four connections, kept for what follows
    await asyncio.gather(*(client.conversation_info("c") for _ in range(4)))
    assert raw.connections == 4
    await client.close()


def _answer(head: bytes, body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\n" + head + b"\r\n" + body


@pytest.mark.parametrize(
    "answer",
    [
        _answer(b"Content-Length: 11\r\n", b'{"ok":true}'),
        _answer(
            b"Transfer-Encoding: chunked\r\n",
            b'4;name=x\r\n{"ok\r\n7\r\n":true}\r\n0\r\nX-Trailer: 1\r\n\r\n',
        ),
        _answer(
            b"Content-Encoding: gzip\r\nContent-Length: %d\r\n"
            % len(gzip.compress(b'{"ok":true}')),
            gzip.compress(b'{"ok":true}'),
        ),
        _answer(
            b"Content-Encoding: deflate\r\nContent-Length: %d\r\n"
            % len(zlib.compress(b'{"ok":true}')),
            zlib.compress(b'{"ok":true}'),
        ),
        b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + OK,
    ],
    ids=["length", "chunked", "gzip", "deflate", "informational-first"],
)
async def test_every_framing_and_coding_of_an_answer_is_read(raw: Raw, answer: bytes) -> None:
    raw.answer = lambda request: answer
    client = HttpPlatformClient(raw.url, "t")
    for _ in range(2):
        assert await client.conversation_info("c") == {"ok": True}
    assert raw.connections == 1
    await client.close()


async def test_an_answer_ended_by_closing_and_connection_close_are_not_reused(raw: Raw) -> None:
    answers = iter(
        [
            (b'HTTP/1.1 200 OK\r\n\r\n{"ok":true}', True),  # no length: ends with the connection
            (
                b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 11\r\n\r\n"
                + b'{"ok":true}',
                False,
            ),
            (OK, False),
        ]
    )

    def answer(request: bytes) -> bytes:
        text, raw.close_after = next(answers)
        return text

    raw.answer = answer
    client = HttpPlatformClient(raw.url, "t")
    for _ in range(3):
        assert await client.conversation_info("c") == {"ok": True}
    assert raw.connections == 3
    await client.close()


async def test_an_idle_connection_the_platform_closed_is_replaced(raw: Raw) -> None:
    client = HttpPlatformClient(raw.url, "t")
    await client.conversation_info("c")
    raw.writers[0].close()  # the server's keep-alive ran out
    await asyncio.sleep(0.05)
    assert await client.conversation_info("c") == {"ok": True}
    assert raw.connections == 2
    await client.close()


async def test_an_idle_connection_past_its_expiry_is_not_reused(raw: Raw) -> None:
    pool = Http11Pool(raw.url, timeout=5, keep=4, keepalive_expiry=0.05)
    await pool.request("GET", f"{raw.url}/a", {})
    await asyncio.sleep(0.1)
    await pool.request("GET", f"{raw.url}/a", {})
    assert raw.connections == 2
    await pool.aclose()


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (None, "RemoteProtocolError: Server disconnected without sending a response."),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{",
            "RemoteProtocolError: peer closed connection without sending complete message body",
        ),
        (b"HTTP/9 200 OK\r\n\r\n", "RemoteProtocolError: illegal status line"),
        (b"HTTP/1.1 200 OK\r\n bad\r\n\r\n", "RemoteProtocolError: continuation line at start"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
            "RemoteProtocolError: conflicting Content-Length headers",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
            "RemoteProtocolError: illegal chunk header",
        ),
    ],
    ids=["closed", "cut-short", "not-http", "folded-header", "two-lengths", "bad-chunk"],
)
async def test_a_broken_answer_is_the_transient_platform_error_httpx_gave(
    raw: Raw, answer: bytes | None, expected: str
) -> None:
    raw.answer = lambda request: answer
    raw.close_after = True
    client = HttpPlatformClient(raw.url, "t")
    async with httpx.AsyncClient() as http:
        through_httpx = HttpPlatformClient(raw.url, "t", http=http)
        with pytest.raises(PlatformError) as mine:
            await client.conversation_info("c")
        with pytest.raises(PlatformError) as theirs:
            await through_httpx.conversation_info("c")
    assert (mine.value.status, mine.value.reason) == (theirs.value.status, theirs.value.reason)
    assert mine.value.status == 0
    assert f"the request to the platform failed ({expected}" in mine.value.reason
    await client.close()


async def test_no_answer_within_the_timeout_is_a_read_timeout(raw: Raw) -> None:
    raw.answer = lambda request: b""  # the request is read, the answer never comes
    client = HttpPlatformClient(raw.url, "t", timeout=0.2)
    with pytest.raises(PlatformError) as caught:
        await client.conversation_info("c")
    assert (caught.value.status, caught.value.reason) == (
        0,
        "the platform did not answer in time (ReadTimeout)",
    )
    await client.close()


async def test_a_refusal_carries_status_reason_and_code(raw: Raw) -> None:
    body = b'{"status":409,"code":"revision_conflict","reason":"record r1 is at revision 3"}'
    raw.answer = lambda request: (
        b"HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    client = HttpPlatformClient(raw.url, "t")
    with pytest.raises(PlatformError) as caught:
        await client.conversation_info("c")
    assert (caught.value.status, caught.value.code) == (409, "revision_conflict")
    assert caught.value.reason == "record r1 is at revision 3"
    await client.close()


async def test_a_header_value_httpx_refuses_still_goes_to_httpx(raw: Raw) -> None:
    client = HttpPlatformClient(raw.url, "t")
    async with httpx.AsyncClient() as http:
        before = HttpPlatformClient(raw.url, "t", http=http)
        for cid in ("conv\r\nX-Evil: 1", "会话"):
            with pytest.raises((PlatformError, UnicodeEncodeError)) as mine:
                await client.conversation_info(cid)
            with pytest.raises((PlatformError, UnicodeEncodeError)) as theirs:
                await before.conversation_info(cid)
            assert (type(mine.value), str(mine.value)) == (type(theirs.value), str(theirs.value))
    assert raw.requests == []
    await client.close()


async def test_a_proxy_in_the_environment_leaves_the_requests_to_httpx(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    client = HttpPlatformClient("http://127.0.0.1:9", "t")
    assert client._lean is None
    await client.close()


async def test_each_request_is_logged_as_httpx_logs_it(
    raw: Raw, caplog: pytest.LogCaptureFixture
) -> None:
    client = HttpPlatformClient(raw.url, "t")
    with caplog.at_level(logging.INFO, logger="httpx"):
        await client.turns("c", 1.5)
    assert [r.getMessage() for r in caplog.records if r.name == "httpx"] == [
        f'HTTP Request: GET {raw.url}/internal/v1/conversation/turns?after=1.5&limit=1000 "HTTP/1.1 200 OK"'
    ]
    await client.close()


async def test_query_values_equal_in_python_are_told_apart(raw: Raw) -> None:
    client = HttpPlatformClient(raw.url, "t")
    for value in (1, 1.0, True):
        await client.request("GET", "data", params={"x": value})
    assert [r.split(b" ")[1] for r in raw.requests] == [
        b"/internal/v1/data?x=1",
        b"/internal/v1/data?x=1.0",
        b"/internal/v1/data?x=true",
    ]
    await client.close()
