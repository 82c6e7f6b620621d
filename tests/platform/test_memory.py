"""Memory: a conversation's key → text notes, with every limit on both sides of its bound."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from buddy.capabilities.memory.limits import (
    MEMORY_ENTRIES_MAX,
    MEMORY_KEY_CHARS,
    MEMORY_TEXT_BYTES,
    MEMORY_TOTAL_BYTES,
)
from tests.platform.conftest import Dev

pytestmark = pytest.mark.anyio

URL = "/internal/v1/memory"


def at(key: str) -> str:
    """The entry's URL; whitespace and the like percent-encoded, a "/" left as a separator."""
    return f"{URL}/{quote(key, safe='/')}"


async def put(dev: Dev, headers: dict[str, str], key: str, text: str) -> httpx.Response:
    return await dev.http.put(at(key), headers=headers, json={"text": text})


async def entries(dev: Dev, headers: dict[str, str]) -> list[dict[str, Any]]:
    response = await dev.http.get(URL, headers=headers)
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["entries"]
    return found


async def memory_rows(dev: Dev, conversation_id: str) -> int:
    def count(conn: sqlite3.Connection) -> int:
        (n,) = conn.execute(
            "SELECT COUNT(*) FROM memory WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()
        return int(n)

    result: int = await dev.app.state.platform.store.read(count)
    return result


async def test_write_list_overwrite_delete(dev: Dev) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    assert await entries(dev, headers) == []
    first = await put(dev, headers, "口味", "不吃香菜")
    assert first.status_code == 200
    assert first.json()["key"] == "口味"
    assert first.json()["text"] == "不吃香菜"
    await put(dev, headers, "b", "2")
    await put(dev, headers, "A", "1")
    assert [e["key"] for e in await entries(dev, headers)] == ["A", "b", "口味"]

    await dev.http.post("/dev/clock", headers=dev.admin, json={"advance_seconds": 60})
    again = await put(dev, headers, "口味", "不吃香菜，爱吃辣")
    assert again.json()["updated_at"] >= first.json()["updated_at"] + 60
    listed = {e["key"]: e for e in await entries(dev, headers)}
    assert listed["口味"]["text"] == "不吃香菜，爱吃辣"
    assert len(listed) == 3

    deleted = await dev.http.delete(f"{URL}/口味", headers=headers)
    assert deleted.status_code == 204
    assert deleted.content == b""
    absent = await dev.http.delete(f"{URL}/口味", headers=headers)
    assert absent.status_code == 204
    assert [e["key"] for e in await entries(dev, headers)] == ["A", "b"]


async def test_memory_is_per_conversation_and_per_identity(dev: Dev) -> None:
    one = await dev.conversation()
    two = await dev.conversation()
    mine = await dev.conversation(dev=True)
    await put(dev, dev.auth(one["id"]), "k", "one")
    assert await entries(dev, dev.auth(two["id"])) == []
    assert await entries(dev, dev.auth(mine["id"], dev=True)) == []
    # The dev identity cannot reach a production conversation's memory.
    response = await dev.http.get(URL, headers=dev.auth(one["id"], dev=True))
    assert response.status_code == 404
    assert response.json()["code"] == "conversation_not_found"


@pytest.mark.parametrize(
    ("key", "status"),
    [
        ("k" * MEMORY_KEY_CHARS, 200),
        ("k" * (MEMORY_KEY_CHARS + 1), 400),
        ("记" * MEMORY_KEY_CHARS, 200),  # characters, not bytes
        ("记" * (MEMORY_KEY_CHARS + 1), 400),
        ("a", 200),
        ("", 400),
        ("a b", 400),
        ("a\tb", 400),
        ("a\nb", 400),
        ("a\u3000b", 400),  # an ideographic (full-width) space is whitespace too
        ("a/b", 400),
        ("/a", 400),
        ("a/", 400),
        ("emoji-🙂_ok.1", 200),
    ],
)
async def test_key_rules(dev: Dev, key: str, status: int) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    response = await put(dev, headers, key, "x")
    assert response.status_code == status, response.text
    listed = [e["key"] for e in await entries(dev, headers)]
    deleted = await dev.http.delete(at(key), headers=headers)
    if status == 200:
        assert response.json()["key"] == key
        assert listed == [key]
        assert deleted.status_code == 204
    else:
        body = response.json()
        assert body == {"status": 400, "code": "memory_key_invalid", "reason": body["reason"]}
        assert body["reason"]
        assert deleted.status_code == 400
        assert deleted.json()["code"] == "memory_key_invalid"
        assert listed == []


async def test_key_reason_names_the_limit(dev: Dev) -> None:
    conv = await dev.conversation()
    response = await put(dev, dev.auth(conv["id"]), "k" * 65, "x")
    assert response.json()["reason"] == "memory key is 65 characters; the limit is 64"
    slash = await put(dev, dev.auth(conv["id"]), "a/b", "x")
    assert "'/'" in slash.json()["reason"]


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("a" * MEMORY_TEXT_BYTES, 200),
        ("a" * (MEMORY_TEXT_BYTES + 1), 400),
        # 3 bytes per character in UTF-8: the limit is in bytes, not characters.
        ("中" * (MEMORY_TEXT_BYTES // 3) + "a", 200),  # 16383 + 1 = 16384 bytes
        ("中" * (MEMORY_TEXT_BYTES // 3) + "ab", 400),  # 16385 bytes
        ("中" * (MEMORY_TEXT_BYTES // 3 + 1), 400),  # 5462 characters, 16386 bytes
        ("", 200),
    ],
)
async def test_text_size_limit(dev: Dev, text: str, status: int) -> None:
    conv = await dev.conversation()
    response = await put(dev, dev.auth(conv["id"]), "k", text)
    assert response.status_code == status, response.text[:200]
    if status == 400:
        size = len(text.encode())
        assert response.json() == {
            "status": 400,
            "code": "memory_text_too_long",
            "reason": f"memory text is {size} bytes; the limit is {MEMORY_TEXT_BYTES}",
        }
        assert await entries(dev, dev.auth(conv["id"])) == []
    else:
        assert response.json()["text"] == text


@pytest.mark.parametrize(
    ("count", "status"), [(MEMORY_ENTRIES_MAX, 200), (MEMORY_ENTRIES_MAX + 1, 400)]
)
async def test_entry_count_limit(dev: Dev, count: int, status: int) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    for i in range(count - 1):
        assert (await put(dev, headers, f"k{i:02}", "x")).status_code == 200
    last = await put(dev, headers, "last", "x")
    assert last.status_code == status, last.text
    if status == 400:
        assert last.json()["code"] == "memory_full"
        assert str(MEMORY_ENTRIES_MAX) in last.json()["reason"]
    assert len(await entries(dev, headers)) == min(count, MEMORY_ENTRIES_MAX)


async def test_overwriting_when_full_is_not_a_new_entry(dev: Dev) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    for i in range(MEMORY_ENTRIES_MAX):
        await put(dev, headers, f"k{i:02}", "x")
    assert (await put(dev, headers, "k00", "changed")).status_code == 200
    assert (await put(dev, headers, "new", "x")).json()["code"] == "memory_full"
    assert (await dev.http.delete(f"{URL}/k01", headers=headers)).status_code == 204
    assert (await put(dev, headers, "new", "x")).status_code == 200


@pytest.mark.parametrize(
    ("total", "status"), [(MEMORY_TOTAL_BYTES, 200), (MEMORY_TOTAL_BYTES + 1, 400)]
)
async def test_total_size_limit(dev: Dev, total: int, status: int) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    full, rest = divmod(total, MEMORY_TEXT_BYTES)
    sizes = [MEMORY_TEXT_BYTES] * full + ([rest] if rest else [])
    responses = [await put(dev, headers, f"k{i:02}", "a" * size) for i, size in enumerate(sizes)]
    assert [r.status_code for r in responses[:-1]] == [200] * (len(sizes) - 1)
    assert responses[-1].status_code == status, responses[-1].text
    stored = sum(len(e["text"].encode()) for e in await entries(dev, headers))
    if status == 400:
        assert responses[-1].json() == {
            "status": 400,
            "code": "memory_total_too_large",
            "reason": f"memory would hold {total} bytes of text after this write;"
            f" the limit is {MEMORY_TOTAL_BYTES}",
        }
        assert stored == total - sizes[-1]
    else:
        assert stored == total


async def test_total_counts_bytes_after_an_overwrite(dev: Dev) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    count = MEMORY_TOTAL_BYTES // MEMORY_TEXT_BYTES
    for i in range(count):
        await put(dev, headers, f"k{i:02}", "a" * MEMORY_TEXT_BYTES)
    # Overwriting with the same size keeps the total at the limit.
    assert (await put(dev, headers, "k00", "b" * MEMORY_TEXT_BYTES)).status_code == 200
    # Shrinking one entry (in multi-byte text) makes room for exactly that many bytes.
    assert (await put(dev, headers, "k00", "中" * 5000)).status_code == 200  # 15000 bytes
    assert (await put(dev, headers, "new", "a" * 1385)).status_code == 400
    assert (await put(dev, headers, "new", "a" * 1384)).status_code == 200


async def test_concurrent_writes_cannot_pass_the_entry_limit(dev: Dev) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    responses = await asyncio.gather(
        *(put(dev, headers, f"k{i:03}", "x") for i in range(MEMORY_ENTRIES_MAX + 6))
    )
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] * MEMORY_ENTRIES_MAX + [400] * 6
    assert len(await entries(dev, headers)) == MEMORY_ENTRIES_MAX


@pytest.mark.parametrize(
    "body",
    [
        b'{"text": "a", "extra": 1}',
        b"{}",
        b'{"text": 5}',
        b'{"text": null}',
        b'{"text": "\\ud800"}',  # a lone surrogate cannot be stored as UTF-8
        b"not json",
    ],
)
async def test_malformed_bodies_are_400(dev: Dev, body: bytes) -> None:
    conv = await dev.conversation()
    headers = {**dev.auth(conv["id"]), "Content-Type": "application/json"}
    response = await dev.http.put(f"{URL}/k", headers=headers, content=body)
    assert response.status_code == 400, response.text
    assert response.json()["reason"]
    assert await entries(dev, dev.auth(conv["id"])) == []


async def test_auth_and_conversation_are_required(dev: Dev) -> None:
    conv = await dev.conversation()
    no_token = await dev.http.get(URL, headers={"X-Conversation-Id": conv["id"]})
    assert no_token.status_code == 401
    unknown = await dev.http.put(f"{URL}/k", headers=dev.auth("c_nope"), json={"text": "x"})
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "conversation_not_found"
    no_header = await dev.http.get(URL, headers=dev.auth())
    assert no_header.status_code == 400


async def test_deleting_the_conversation_deletes_its_memory(dev: Dev) -> None:
    conv = await dev.conversation()
    other = await dev.conversation()
    await put(dev, dev.auth(conv["id"]), "k", "x")
    await put(dev, dev.auth(other["id"]), "k", "kept")
    assert await memory_rows(dev, conv["id"]) == 1
    gone = await dev.http.delete(f"/dev/conversations/{conv['id']}", headers=dev.admin)
    assert gone.status_code == 204
    assert await memory_rows(dev, conv["id"]) == 0
    response = await dev.http.get(URL, headers=dev.auth(conv["id"]))
    assert response.status_code == 404
    assert [e["text"] for e in await entries(dev, dev.auth(other["id"]))] == ["kept"]


async def test_memory_survives_a_restart(dev: Dev, tmp_path: Path) -> None:
    from buddy.platform.dev.app import create_app

    conv = await dev.conversation()
    await put(dev, dev.auth(conv["id"]), "k", "持久")
    app = create_app(str(tmp_path / "platform.db"), admin_token="x")
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://p") as http,
    ):
        response = await http.get(URL, headers=dev.auth(conv["id"]))
        assert [e["text"] for e in response.json()["entries"]] == ["持久"]


async def test_memory_over_a_real_socket(live: Dev) -> None:
    conv = await live.conversation()
    headers = live.auth(conv["id"])
    assert live.url.startswith("http://127.0.0.1:")
    ok = await put(live, headers, "口味", "中" * (MEMORY_TEXT_BYTES // 3))
    assert ok.status_code == 200
    # Percent-encoded separators reach the platform decoded and are refused.
    for raw in ("a%20b", "a%2Fb", "a/b", "a%09b"):
        response = await live.http.put(f"{URL}/{raw}", headers=headers, json={"text": "x"})
        assert response.status_code == 400, raw
        assert response.json()["code"] == "memory_key_invalid"
    too_long = await put(live, headers, "k", "中" * (MEMORY_TEXT_BYTES // 3 + 1))
    assert too_long.json()["code"] == "memory_text_too_long"
    assert [e["key"] for e in await entries(live, headers)] == ["口味"]
    assert (await live.http.delete(f"{URL}/口味", headers=headers)).status_code == 204
    assert await entries(live, headers) == []
