"""One table of memory limits, run against the dev platform served on loopback and against
``buddy.Agent``'s DetachedClient (the dev platform inside the process, no server): each
refuses the same writes with the same PlatformError (status and reason), and accepts the
same ones."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import httpx
import pytest

from buddy.capabilities.memory.limits import (
    MEMORY_ENTRIES_MAX,
    MEMORY_KEY_CHARS,
    MEMORY_TEXT_BYTES,
    MEMORY_TOTAL_BYTES,
)
from buddy.errors import PlatformError
from buddy.platform.api import PlatformClient, path_segment
from buddy.platform.client import HttpPlatformClient
from buddy.runtime.agent import DetachedClient
from tests.platform.conftest import Dev

pytestmark = pytest.mark.anyio

FULL = MEMORY_TEXT_BYTES  # texts of the largest size fill memory in few entries
_FILL_TOTAL = [(f"t{i:02}", "a" * FULL) for i in range(MEMORY_TOTAL_BYTES // FULL)]
_FILL_COUNT = [(f"k{i:02}", "x") for i in range(MEMORY_ENTRIES_MAX)]


@dataclass(frozen=True)
class Case:
    """Writes ``before`` (all accepted), then ``key`` ← ``text`` (or a delete of ``key``)."""

    name: str
    key: str
    text: str | None
    status: int  # 200 accepted, else the refusal's status
    before: tuple[tuple[str, str], ...] = ()


CASES = [
    Case("key-at-limit", "k" * MEMORY_KEY_CHARS, "x", 200),
    Case("key-over-limit", "k" * (MEMORY_KEY_CHARS + 1), "x", 400),
    Case("key-chars-not-bytes", "记" * MEMORY_KEY_CHARS, "x", 200),
    Case("key-one-char", "a", "x", 200),
    Case("key-empty", "", "x", 400),
    Case("key-space", "a b", "x", 400),
    Case("key-tab", "a\tb", "x", 400),
    Case("key-ideographic-space", "a\u3000b", "x", 400),
    Case("key-vertical-tab", "a\x0bb", "x", 400),
    Case("key-next-line", "a\x85b", "x", 400),
    Case("key-slash", "a/b", "x", 400),
    Case("key-dots", "..", "x", 200),
    Case("key-emoji", "emoji-🙂_ok.1", "x", 200),
    Case("text-at-limit", "k", "a" * MEMORY_TEXT_BYTES, 200),
    Case("text-over-limit", "k", "a" * (MEMORY_TEXT_BYTES + 1), 400),
    Case("text-bytes-at-limit", "k", "中" * (MEMORY_TEXT_BYTES // 3) + "a", 200),
    Case("text-bytes-over-limit", "k", "中" * (MEMORY_TEXT_BYTES // 3) + "ab", 400),
    Case("text-empty", "k", "", 200),
    Case("text-lone-surrogate", "k", "a\ud800", 400),
    Case("entries-at-limit", "last", "x", 200, tuple(_FILL_COUNT[:-1])),
    Case("entries-over-limit", "last", "x", 400, tuple(_FILL_COUNT)),
    Case("entries-full-overwrite", "k00", "changed", 200, tuple(_FILL_COUNT)),
    Case("total-at-limit", "u", "", 200, tuple(_FILL_TOTAL)),
    Case("total-over-limit", "u", "a", 400, tuple(_FILL_TOTAL)),
    Case("total-overwrite-same-size", "t00", "b" * FULL, 200, tuple(_FILL_TOTAL)),
    Case("delete-valid", "k", None, 200),
    Case("delete-key-over-limit", "k" * (MEMORY_KEY_CHARS + 1), None, 400),
    Case("delete-key-slash", "a/b", None, 400),
]

Make = Callable[[], Awaitable[tuple[PlatformClient, str]]]


@pytest.fixture
async def http_client(dev: Dev) -> AsyncIterator[Make]:
    clients: list[HttpPlatformClient] = []

    async def make() -> tuple[PlatformClient, str]:
        conv = await dev.conversation()
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=dev.app), base_url=dev.url)
        client = HttpPlatformClient(dev.url, dev.token, http=http)
        clients.append(client)
        return client, conv["id"]

    yield make
    for client in clients:
        await client._http.aclose()


@pytest.fixture
async def detached() -> AsyncIterator[DetachedClient]:
    client = DetachedClient()
    yield client
    await client.close()


async def _write(client: PlatformClient, cid: str, key: str, text: str) -> dict[str, str]:
    path = f"memory/{path_segment(key)}"
    entry: dict[str, str] = await client.request("PUT", path, cid=cid, body={"text": text})
    return entry


async def _keys(client: PlatformClient, cid: str) -> list[str]:
    return [e["key"] for e in (await client.request("GET", "memory", cid=cid))["entries"]]


async def _run(client: PlatformClient, cid: str, case: Case) -> tuple[int, str, list[str]]:
    for key, text in case.before:
        await _write(client, cid, key, text)
    try:
        if case.text is None:
            await client.request("DELETE", f"memory/{path_segment(case.key)}", cid=cid)
        else:
            entry = await _write(client, cid, case.key, case.text)
            assert entry["key"] == case.key
            assert entry["text"] == case.text
        status, reason = 200, ""
    except PlatformError as exc:
        status, reason = exc.status, exc.reason
    return status, reason, await _keys(client, cid)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_same_limits_on_the_platform_and_in_process(
    http_client: Make, detached: DetachedClient, case: Case
) -> None:
    platform, cid = await http_client()
    on_platform = await _run(platform, cid, case)
    in_process = await _run(detached, "local-1", case)
    assert on_platform[0] == case.status, on_platform[1]
    assert in_process == on_platform
    if case.status != 200:
        assert on_platform[1]  # a reason the model can read
        assert case.key not in on_platform[2] or case.before  # nothing new stored


async def test_surrogate_key_is_refused_by_both(
    http_client: Make, detached: DetachedClient
) -> None:
    # The HTTP client sends the key's bytes; the platform refuses the path as not UTF-8.
    platform, cid = await http_client()
    for client, conversation in ((platform, cid), (detached, "local-1")):
        with pytest.raises(PlatformError) as caught:
            await _write(client, conversation, "a\ud800", "x")
        assert caught.value.status == 400
        assert await _keys(client, conversation) == []
