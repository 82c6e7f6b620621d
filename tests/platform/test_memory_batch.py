"""Memory's batch (``POST /internal/v1/memory``) and revision: every rule of the single
requests on both sides of its bound, all or nothing on a refusal, a revision that moves on
by exactly one per change, answered by every memory request and stamped on each event the
gateway delivers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import fastapi.routing
import httpx
import pytest

from buddy.capabilities.memory.limits import (
    MEMORY_BATCH_ITEMS,
    MEMORY_ENTRIES_MAX,
    MEMORY_KEY_CHARS,
    MEMORY_TEXT_BYTES,
    MEMORY_TOTAL_BYTES,
)
from buddy.platform.client import Backoff, HttpPlatformClient
from buddy.platform.dev.app import REQUEST_BODY_BYTES
from tests.platform.conftest import Dev
from tests.platform.test_memory import URL, at, entries, put

pytestmark = pytest.mark.anyio


async def batch(
    dev: Dev,
    headers: dict[str, str],
    writes: list[tuple[str, str]] = (),  # type: ignore[assignment]
    deletes: list[str] = (),  # type: ignore[assignment]
) -> httpx.Response:
    body = {"deletes": list(deletes), "writes": [{"key": k, "text": t} for k, t in writes]}
    return await dev.http.post(URL, headers=headers, json=body)


async def revision(dev: Dev, headers: dict[str, str]) -> int:
    response = await dev.http.get(URL, headers=headers)
    found: int = response.json()["revision"]
    return found


async def test_every_change_moves_the_revision_on_by_one_and_every_answer_says_it(
    dev: Dev,
) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    assert await revision(dev, headers) == 0  # never changed
    assert (await put(dev, headers, "a", "1")).json()["revision"] == 1
    assert (await put(dev, headers, "a", "1")).json()["revision"] == 2  # the same text: a write
    assert (await dev.http.delete(at("a"), headers=headers)).status_code == 204
    assert await revision(dev, headers) == 3
    assert (await dev.http.delete(at("a"), headers=headers)).status_code == 204  # absent
    assert await revision(dev, headers) == 4
    applied = await batch(dev, headers, [("b", "2"), ("c", "3")], ["x", "y"])
    assert applied.status_code == 200, applied.text
    assert applied.json()["revision"] == 5  # one batch, one step
    assert (await batch(dev, headers)).json()["revision"] == 5  # empty: nothing moves
    # Refused requests move nothing.
    assert (await put(dev, headers, "k" * (MEMORY_KEY_CHARS + 1), "x")).status_code == 400
    assert (await batch(dev, headers, [("d", "4"), ("", "x")])).status_code == 400
    assert await revision(dev, headers) == 5
    other = await dev.conversation()
    assert await revision(dev, dev.auth(other["id"])) == 0  # per conversation


async def test_a_batch_deletes_first_then_writes_in_order(dev: Dev) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    await put(dev, headers, "old", "x")
    await put(dev, headers, "both", "before")
    writes = [("a", "1"), ("both", "after"), ("a", "2")]
    applied = await batch(dev, headers, writes, ["old", "both", "absent"])
    assert applied.status_code == 200, applied.text
    listed = {e["key"]: e["text"] for e in await entries(dev, headers)}
    assert listed == {"a": "2", "both": "after"}  # a later write of a key wins
    updated = {e["updated_at"] for e in await entries(dev, headers)}
    assert updated == {applied.json()["updated_at"]}


# Each rule of a single write, on both sides of its bound: (writes, deletes, code or None).
_KEY_AT = "k" * MEMORY_KEY_CHARS
_KEY_OVER = "k" * (MEMORY_KEY_CHARS + 1)
_TEXT_AT = "中" * (MEMORY_TEXT_BYTES // 3) + "a"  # 16384 bytes
_TEXT_OVER = "中" * (MEMORY_TEXT_BYTES // 3) + "ab"  # 16385 bytes
LIMITS: list[tuple[str, list[tuple[str, str]], list[str], str | None]] = [
    ("key-at-limit", [(_KEY_AT, "x")], [], None),
    ("key-over-limit", [(_KEY_OVER, "x")], [], "memory_key_invalid"),
    ("key-chars-not-bytes", [("记" * MEMORY_KEY_CHARS, "x")], [], None),
    ("key-empty", [("", "x")], [], "memory_key_invalid"),
    ("key-whitespace", [("a\u3000b", "x")], [], "memory_key_invalid"),
    ("key-slash", [("a/b", "x")], [], "memory_key_invalid"),
    ("delete-key-at-limit", [], [_KEY_AT], None),
    ("delete-key-over-limit", [], [_KEY_OVER], "memory_key_invalid"),
    ("delete-key-slash", [], ["a/b"], "memory_key_invalid"),
    ("text-at-limit", [("k", _TEXT_AT)], [], None),
    ("text-over-limit", [("k", _TEXT_OVER)], [], "memory_text_too_long"),
    ("text-empty", [("k", "")], [], None),
    # With the test's own first write and delete: MEMORY_BATCH_ITEMS, then one more.
    ("writes-at-limit", [(f"k{i:02}", "x") for i in range(MEMORY_BATCH_ITEMS - 1)], [], None),
    (
        "writes-over-limit",
        [(f"k{i:02}", "x") for i in range(MEMORY_BATCH_ITEMS)],
        [],
        "invalid_request",
    ),
    ("deletes-at-limit", [], [f"k{i:02}" for i in range(MEMORY_BATCH_ITEMS - 1)], None),
    ("deletes-over-limit", [], [f"k{i:02}" for i in range(MEMORY_BATCH_ITEMS)], "invalid_request"),
]


@pytest.mark.parametrize(
    ("writes", "deletes", "code"), [c[1:] for c in LIMITS], ids=[c[0] for c in LIMITS]
)
async def test_each_item_is_held_to_its_single_requests_rules(
    dev: Dev, writes: list[tuple[str, str]], deletes: list[str], code: str | None
) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    await put(dev, headers, "kept", "untouched")
    # The first item is always fine, so a refusal leaves it unapplied: all or nothing.
    response = await batch(dev, headers, [("first", "x"), *writes], ["kept", *deletes])
    listed = {e["key"] for e in await entries(dev, headers)}
    if code is None:
        assert response.status_code == 200, response.text[:300]
        assert "first" in listed and "kept" not in listed
        return
    assert response.status_code == 400, response.text[:300]
    assert response.json()["code"] == code
    assert listed == {"kept"}
    assert await revision(dev, headers) == 1


async def test_a_refusal_names_the_item_with_the_single_requests_reason(dev: Dev) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    single = (await put(dev, headers, "k", _TEXT_OVER)).json()
    response = await batch(dev, headers, [("a", "x"), ("k", _TEXT_OVER)])
    assert response.json() == {**single, "reason": f"writes[1]: {single['reason']}"}
    bad_key = (await dev.http.put(at(_KEY_OVER), headers=headers, json={"text": "x"})).json()
    response = await batch(dev, headers, deletes=["a", _KEY_OVER])
    assert response.json() == {**bad_key, "reason": f"deletes[1]: {bad_key['reason']}"}


@pytest.mark.parametrize(
    ("count", "status"), [(MEMORY_ENTRIES_MAX, 200), (MEMORY_ENTRIES_MAX + 1, 400)]
)
async def test_entry_count_limit_and_nothing_applied_past_it(
    dev: Dev, count: int, status: int
) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    half = MEMORY_ENTRIES_MAX // 2
    for i in range(half):
        await put(dev, headers, f"s{i:02}", "x")
    writes = [(f"b{i:02}", "x") for i in range(count - half)]
    response = await batch(dev, headers, [("s00", "changed"), *writes])
    assert response.status_code == status, response.text[:300]
    listed = {e["key"]: e["text"] for e in await entries(dev, headers)}
    if status == 400:
        assert response.json() == {
            "status": 400,
            "code": "memory_full",
            "reason": f"writes[{len(writes)}]: memory has {MEMORY_ENTRIES_MAX} entries;"
            f" the limit is {MEMORY_ENTRIES_MAX} (delete one or overwrite an existing key)",
        }
        assert listed["s00"] == "x" and len(listed) == half  # not even the overwrite
    else:
        assert len(listed) == MEMORY_ENTRIES_MAX and listed["s00"] == "changed"


async def test_deletes_make_room_first(dev: Dev) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    for i in range(MEMORY_ENTRIES_MAX):
        await put(dev, headers, f"k{i:02}", "x")
    assert (await batch(dev, headers, [("new", "x")])).json()["code"] == "memory_full"
    assert (await batch(dev, headers, [("new", "x")], ["k00"])).status_code == 200
    assert len(await entries(dev, headers)) == MEMORY_ENTRIES_MAX


@pytest.mark.parametrize(
    ("total", "status"), [(MEMORY_TOTAL_BYTES, 200), (MEMORY_TOTAL_BYTES + 1, 400)]
)
async def test_total_size_limit(dev: Dev, total: int, status: int) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    full, rest = divmod(total, MEMORY_TEXT_BYTES)
    sizes = [MEMORY_TEXT_BYTES] * full + ([rest] if rest else [])
    writes = [(f"k{i:02}", "a" * size) for i, size in enumerate(sizes)]
    response = await batch(dev, headers, writes)
    assert response.status_code == status, response.text[:300]
    stored = sum(len(e["text"].encode()) for e in await entries(dev, headers))
    if status == 400:
        assert response.json() == {
            "status": 400,
            "code": "memory_total_too_large",
            "reason": f"writes[{len(sizes) - 1}]: memory would hold {total} bytes of text"
            f" after this write; the limit is {MEMORY_TOTAL_BYTES}",
        }
        assert stored == 0
    else:
        assert stored == total


@pytest.mark.parametrize(
    "body",
    [
        b'{"writes": [], "extra": 1}',
        b'{"writes": [{"key": "a"}]}',
        b'{"writes": [{"key": "a", "text": "x", "more": 1}]}',
        b'{"writes": [{"key": 5, "text": "x"}]}',
        b'{"deletes": "a"}',
        b'{"writes": [{"key": "a", "text": "\\ud800"}]}',
        b"not json",
    ],
)
async def test_malformed_batches_are_400(dev: Dev, body: bytes) -> None:
    conv = await dev.conversation()
    headers = {**dev.auth(conv["id"]), "Content-Type": "application/json"}
    response = await dev.http.post(URL, headers=headers, content=body)
    assert response.status_code == 400, response.text
    assert response.json()["reason"]
    assert await entries(dev, dev.auth(conv["id"])) == []


async def test_concurrent_batches_cannot_pass_the_entry_limit(dev: Dev) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    answers = await asyncio.gather(
        *(batch(dev, headers, [(f"k{n}-{i}", "x") for i in range(10)]) for n in range(8))
    )
    assert sorted(r.status_code for r in answers) == [200] * 6 + [400] * 2
    assert len(await entries(dev, headers)) == 60
    assert await revision(dev, headers) == 6


async def test_each_event_carries_the_memory_revision_as_it_is_delivered(live: Dev) -> None:
    conv = await live.conversation()
    headers = live.auth(conv["id"])
    await put(live, headers, "a", "1")
    said = await live.http.post(
        f"/dev/conversations/{conv['id']}/messages", headers=live.admin, json={"text": "hi"}
    )
    event_id = said.json()["event_id"]
    await put(live, headers, "b", "2")  # after the event was made, before it is delivered

    async def first(client: HttpPlatformClient) -> Any:
        async for event in client.events():
            return event
        return None

    client = HttpPlatformClient(live.url, live.token, backoff=Backoff(0.01, 0.05))
    event = await asyncio.wait_for(first(client), 10)
    await client.close()
    assert event.id == event_id and event.revisions == {"memory": 2}
    await put(live, headers, "c", "3")
    again = HttpPlatformClient(live.url, live.token, backoff=Backoff(0.01, 0.05))
    redelivered = await asyncio.wait_for(first(again), 10)  # not acknowledged: again
    await again.close()
    assert redelivered.id == event_id and redelivered.revisions == {"memory": 3}


async def test_the_in_process_platform_knows_each_revision_without_a_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``buddy.Agent``'s events carry the revision its platform's handlers committed last:
    after the first read of a conversation, no trip to the store for it."""
    from buddy.platform.dev.inprocess import InProcessPlatform

    platform = await InProcessPlatform.open()
    try:
        client = platform.client
        assert client is not None
        cid = await platform.conversation()
        assert await platform.revisions(cid) == {"memory": 0}
        store = platform._app.state.platform.store
        real = store.read
        reads: list[object] = []

        async def read(fn: Any) -> Any:
            reads.append(fn)
            return await real(fn)

        monkeypatch.setattr(store, "read", read)
        await client.request("PUT", "memory/a", cid=cid, body={"text": "1"})
        body = {"writes": [{"key": "b", "text": "2"}], "deletes": ["a"]}
        await client.request("POST", "memory", cid=cid, body=body)
        await client.request("DELETE", "memory/b", cid=cid)
        before = len(reads)
        assert await platform.revisions(cid) == {"memory": 3}
        assert len(reads) == before  # from what the handlers committed
        listed = await client.request("GET", "memory", cid=cid)
        assert listed["revision"] == 3
    finally:
        await platform.close()


async def test_a_batch_is_answered_alike_on_the_routes_short_path_and_fastapis(
    dev: Dev, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client's ordinary batch (a bearer token, one conversation header, an
    ``application/json`` body that validates) skips FastAPI's dependency machinery; any
    other request is FastAPI's. Both answer alike, and a refusal comes in the same order:
    the token before the body's rules, a body that is not JSON before the token."""
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    body = b'{"writes": [{"key": "a", "text": "1"}]}'
    solved = []
    real = fastapi.routing.solve_dependencies  # type: ignore[attr-defined]

    async def solve(**kwargs: Any) -> Any:
        solved.append(kwargs["request"].headers["content-type"])
        return await real(**kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", solve)
    answers = []
    for kind in ("application/json", "application/json; charset=utf-8"):  # short, FastAPI's
        answer = await dev.http.post(URL, headers={**headers, "Content-Type": kind}, content=body)
        answers.append(answer)
    assert solved == ["application/json; charset=utf-8"]
    short, full = answers
    assert (short.status_code, full.status_code) == (200, 200)
    assert [k for k, _ in short.headers.items()] == [k for k, _ in full.headers.items()]
    assert short.headers["content-type"] == full.headers["content-type"] == "application/json"
    assert short.headers["content-length"] == str(len(short.content))  # the time's digits vary
    assert (short.json()["revision"], full.json()["revision"]) == (1, 2)
    assert list(short.json()) == list(full.json()) == ["revision", "updated_at"]
    cases = [
        ("Bearer nope", conv["id"], body, 401, "unauthorized"),
        (
            "Bearer nope",
            conv["id"],
            b'{"writes": [{"key": "a b", "text": "1"}]}',
            401,
            "unauthorized",
        ),
        ("Bearer nope", conv["id"], b"{not json", 400, "invalid_request"),
        ("Basic abc", conv["id"], body, 401, "unauthorized"),
        (f"Bearer {dev.token}", "c_nobody", body, 404, "conversation_not_found"),
        (f"Bearer {dev.token}", conv["id"], b"", 400, "invalid_request"),
        (f"Bearer {dev.token}", conv["id"], b"null", 400, "invalid_request"),
        (
            f"Bearer {dev.token}",
            conv["id"],
            b'{"writes": [{"key": "a b", "text": "1"}]}',
            400,
            "memory_key_invalid",
        ),
    ]
    for auth, cid, content, status, code in cases:
        sent = {"Authorization": auth, "X-Conversation-Id": cid, "Content-Type": "application/json"}
        answer = await dev.http.post(URL, headers=sent, content=content)
        assert (answer.status_code, answer.json()["code"]) == (status, code), (auth, content)
    repeated = [
        *headers.items(),
        ("X-Conversation-Id", "c_other"),
        ("Content-Type", "application/json"),
    ]
    answer = await dev.http.post(URL, headers=repeated, content=body)  # the first, as FastAPI
    assert (answer.status_code, answer.json()["revision"]) == (200, 3)
    big = b'{"writes": [{"key": "a", "text": "' + b"x" * REQUEST_BODY_BYTES + b'"}]}'

    async def chunked() -> AsyncIterator[bytes]:  # no declared length: refused as it is read
        for start in range(0, len(big), 1 << 20):
            yield big[start : start + (1 << 20)]

    sent = {**headers, "Content-Type": "application/json"}
    answer = await dev.http.post(URL, headers=sent, content=chunked())
    assert (answer.status_code, answer.json()["code"]) == (413, "payload_too_large")
