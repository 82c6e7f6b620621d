"""The dev platform app: every app made by ``create_app`` shares the routes as included
(FastAPI builds their handlers once per process), never the data behind them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from buddy.platform.dev.app import REQUEST_BODY_BYTES, create_app
from buddy.platform.dev.parts import parts
from buddy.platform.limits import TURN_STEPS_MAX
from tests.platform.conftest import ADMIN, Dev

pytestmark = pytest.mark.anyio
HEADERS = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
async def two() -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """Clients of two in-memory dev platforms, both running."""
    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(2):
            app: FastAPI = create_app(":memory:", admin_token=ADMIN)
            await stack.enter_async_context(app.router.lifespan_context(app))
            transport = httpx.ASGITransport(app=app)
            http = httpx.AsyncClient(transport=transport, base_url="http://platform")
            clients.append(await stack.enter_async_context(http))
        yield clients[0], clients[1]


def test_apps_share_the_included_routes() -> None:
    first, second = create_app(":memory:"), create_app(":memory:")
    shared = {id(r) for r in first.router.routes} & {id(r) for r in second.router.routes}
    routers = sum(len(p.routers) for p in parts()) + 1  # and the gateway's
    assert len(shared) == routers
    assert first.state.platform is not second.state.platform


async def test_apps_sharing_routes_keep_their_own_data(
    two: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    first, second = two
    for http in (first, second):  # registered in each: the second does not see the first's
        made = await http.post("/dev/buddies", headers=HEADERS, json={"buddy_id": "b"})
        assert made.status_code == 201, made.text
    body = {"identity": "b-dev", "kind": "private", "members": [{"name": "我"}]}
    conv = (await first.post("/dev/conversations", headers=HEADERS, json=body)).json()
    said = await first.post(
        f"/dev/conversations/{conv['id']}/messages", headers=HEADERS, json={"text": "你好"}
    )
    assert said.status_code == 201, said.text
    assert len((await first.get("/dev/events?identity=b-dev", headers=HEADERS)).json()) == 1
    assert (await second.get("/dev/events?identity=b-dev", headers=HEADERS)).json() == []
    other = await second.get(f"/dev/conversations/{conv['id']}/messages", headers=HEADERS)
    assert other.json() == []


@pytest.mark.parametrize("chunked", [False, True])
async def test_an_oversized_turn_commit_is_refused_before_any_lookup(
    dev: Dev, chunked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit of tiny steps over the body limit: 413 from its declared length, or as soon
    as the streamed bytes pass the limit, with no token or event looked up."""
    conv = await dev.conversation()
    store = dev.app.state.platform.store
    touched: list[str] = []

    def spy(name: str) -> Callable[[Any], Awaitable[Any]]:
        original = getattr(store, name)

        async def run(fn: Any) -> Any:
            touched.append(name)
            return await original(fn)

        return run

    for name in ("read", "write"):
        monkeypatch.setattr(store, name, spy(name))
    step = b'{"type":"text"},'
    count = (REQUEST_BODY_BYTES + 1024) // len(step)
    body = b'{"event_id":"evt_none","steps":[' + step * count + b'{"type":"text"}]}'
    assert len(body) > REQUEST_BODY_BYTES

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 1 << 16):
            yield body[start : start + (1 << 16)]

    response = await dev.http.post(
        "/internal/v1/conversation/turns",
        headers={**dev.auth(conv["id"]), "Content-Type": "application/json"},
        content=pieces() if chunked else body,
    )
    assert response.status_code == 413, response.text[:300]
    assert response.json()["code"] == "payload_too_large"
    assert str(REQUEST_BODY_BYTES) in response.json()["reason"]
    assert touched == []


async def test_a_commit_of_too_many_steps_is_refused_for_its_size(dev: Dev) -> None:
    """A 7.9 MiB commit of tiny steps is under the byte limit but has far more steps than a
    turn may: refused as it is read, for the event it names does not matter."""
    conv = await dev.conversation()
    step = b'{"type":"text"},'
    count = int(7.9 * 1024 * 1024) // len(step)
    body = b'{"event_id":"evt_none","steps":[' + step * count + b'{"type":"text"}]}'
    assert len(body) < REQUEST_BODY_BYTES
    response = await dev.http.post(
        "/internal/v1/conversation/turns",
        headers={**dev.auth(conv["id"]), "Content-Type": "application/json"},
        content=body,
    )
    assert response.status_code == 400, response.text[:300]
    assert response.json()["code"] == "invalid_request"
    assert f"at most {TURN_STEPS_MAX} items" in response.json()["reason"]
