"""``buddy.Agent``'s client of its in-process platform hands a request to the app as httpx's
ASGI transport would — the same scope, header fields in the same order, the body in the
same messages — and reads the answer as it would, whether it builds httpx's objects (a
query, a path httpx re-encodes, a header value it encodes) or not."""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest

from buddy.errors import PlatformError
from buddy.platform.dev import inprocess
from buddy.platform.dev.inprocess import _BASE, _Client

pytestmark = pytest.mark.anyio


class Recorder:
    """An ASGI app that keeps what it was handed and answers in two chunks."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        messages = [await receive()]
        while messages[-1].get("more_body"):
            messages.append(await receive())
        self.seen.append((dict(scope), messages))
        status = 404 if scope["path"].endswith("/missing") else 200
        body = b'{"status":404,"code":"not_found","reason":"none"}' if status == 404 else b'{"ok":'
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), (b"x-seen", b"1")],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": status == 200})
        if status == 200:
            await send({"type": "http.response.body", "body": b"true}"})


CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "memory", {"cid": "c_1"}),
    ("POST", "memory", {"cid": "c_1", "body": {"writes": [{"key": "auto:a", "text": "小鱼"}]}}),
    ("POST", "conversations/c_1/turns", {}),
    ("PUT", "memory/auto:fact~1.x", {"cid": "c_1", "body": {"text": "t"}}),
    ("DELETE", "memory/a-b_c!$&'()*+,;=@", {"cid": "c_1"}),
    ("GET", "events", {"params": {"after": "e 1", "limit": 5}}),  # a query: httpx's
    ("GET", "memory/键", {"cid": "c_1"}),  # httpx percent-encodes it
    ("GET", "memory/./a", {"cid": "c_1"}),  # httpx removes the dot segment
    ("GET", "memory", {"cid": "c_é"}),  # httpx refuses or encodes such a value
]


async def _send(client: _Client, method: str, path: str, kwargs: dict[str, Any]) -> Any:
    try:
        return await client.request(method, path, **kwargs)
    except (PlatformError, UnicodeEncodeError) as exc:
        return repr(exc)


@pytest.mark.parametrize(("method", "path", "kwargs"), CASES)
async def test_each_request_reaches_the_app_as_httpxs_asgi_transport_hands_it_over(
    monkeypatch: pytest.MonkeyPatch, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    app = Recorder()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=_BASE) as http:
        client = _Client("tok_1", transport, http)
        direct = await _send(client, method, path, kwargs)
        monkeypatch.setattr(inprocess, "_AS_WRITTEN", re.compile(r"(?!)"))  # httpx's, always
        through_httpx = await _send(client, method, path, kwargs)
    assert direct == through_httpx
    if app.seen:
        assert len(app.seen) == 2
        assert app.seen[0] == app.seen[1]


async def test_a_refusal_reads_as_httpxs(monkeypatch: pytest.MonkeyPatch) -> None:
    app = Recorder()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=_BASE) as http:
        client = _Client("tok_1", transport, http)
        refusals = []
        for always_httpx in (False, True):
            if always_httpx:
                monkeypatch.setattr(inprocess, "_AS_WRITTEN", re.compile(r"(?!)"))
            with pytest.raises(PlatformError) as caught:
                await client.request("GET", "memory/missing", cid="c_1")
            refusals.append((caught.value.status, caught.value.code, str(caught.value)))
    assert refusals[0] == refusals[1] == (404, "not_found", refusals[0][2])
