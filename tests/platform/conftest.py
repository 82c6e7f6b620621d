"""Fixtures for the platform: the dev platform in-process (ASGI) and on a real socket."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from buddy.platform.dev.app import create_app

ADMIN = "adm_test_token"


@dataclass
class Dev:
    """A running dev platform and a registered buddy.

    Attributes:
        http: Client whose base URL is the platform (no auth header set).
        admin: Headers with the admin token (for /dev endpoints).
        buddy_id: A registered buddy.
        token: Its production token; ``dev_token`` its dev token.
        url: Base URL (``http://127.0.0.1:PORT`` on a real socket, ``http://platform`` in-process).
    """

    http: httpx.AsyncClient
    admin: dict[str, str]
    buddy_id: str
    token: str
    dev_token: str
    url: str
    app: Any

    def auth(self, conversation_id: str | None = None, *, dev: bool = False) -> dict[str, str]:
        """Headers of the buddy (its dev identity when ``dev``), bound to a conversation."""
        headers = {"Authorization": f"Bearer {self.dev_token if dev else self.token}"}
        if conversation_id is not None:
            headers["X-Conversation-Id"] = conversation_id
        return headers

    async def conversation(
        self, kind: str = "private", members: list[str] | None = None, *, dev: bool = False
    ) -> dict[str, Any]:
        """Create a conversation (members by name) and return its info."""
        names = members or (["小王"] if kind == "private" else ["小王", "小李"])
        identity = f"{self.buddy_id}-dev" if dev else self.buddy_id
        response = await self.http.post(
            "/dev/conversations",
            headers=self.admin,
            json={"identity": identity, "kind": kind, "members": [{"name": n} for n in names]},
        )
        assert response.status_code == 201, response.text
        info: dict[str, Any] = response.json()
        return info


async def _register(http: httpx.AsyncClient, buddy_id: str = "demo") -> dict[str, str]:
    response = await http.post(
        "/dev/buddies", headers={"Authorization": f"Bearer {ADMIN}"}, json={"buddy_id": buddy_id}
    )
    assert response.status_code == 201, response.text
    created: dict[str, str] = response.json()
    return created


@pytest.fixture
async def dev(tmp_path: Path) -> AsyncIterator[Dev]:
    """The dev platform in-process (ASGI transport, lifespan run), one buddy registered."""
    app = create_app(str(tmp_path / "platform.db"), admin_token=ADMIN)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://platform") as http:
            created = await _register(http)
            yield Dev(
                http,
                {"Authorization": f"Bearer {ADMIN}"},
                created["buddy_id"],
                created["token"],
                created["dev_token"],
                "http://platform",
                app,
            )


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def serve(db: Path, port: int | None = None) -> AsyncIterator[str]:
    """Serve the dev platform with uvicorn on loopback; yields its base URL."""
    port = port or free_port()
    app = create_app(str(db), admin_token=ADMIN)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[Dev]:
    """The dev platform served by uvicorn on a free loopback port, one buddy registered."""
    async with serve(tmp_path / "platform.db") as url, httpx.AsyncClient(base_url=url) as http:
        created = await _register(http)
        yield Dev(
            http,
            {"Authorization": f"Bearer {ADMIN}"},
            created["buddy_id"],
            created["token"],
            created["dev_token"],
            url,
            None,
        )
