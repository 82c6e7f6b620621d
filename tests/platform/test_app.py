"""The dev platform app: every app made by ``create_app`` shares the routes as included
(FastAPI builds their handlers once per process), never the data behind them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import httpx
import pytest
from fastapi import FastAPI

from buddy.platform.dev.app import create_app
from buddy.platform.dev.parts import parts
from tests.platform.conftest import ADMIN

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
