"""schemathesis against the dev platform's /openapi.json: no 5xx, every 4xx with a reason,
and every status an operation answers documented in the document (with its error body).

Bounded: a fixed number of examples per operation, no deadline, on a real socket.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    status_code_conformance,
)

from buddy.platform.dev.app import create_app
from tests.platform.conftest import ADMIN, free_port

schema = schemathesis.openapi.from_dict(create_app(":memory:").openapi())


class _Platform:
    def __init__(self, url: str, token: str, conversations: dict[str, str]) -> None:
        self.url = url
        self.token = token
        self.conversations = conversations


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Platform]:
    db: Path = tmp_path_factory.mktemp("fuzz") / "platform.db"
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(str(db), admin_token=ADMIN), host="127.0.0.1", port=port, log_level="error"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    url = f"http://127.0.0.1:{port}"
    admin = {"Authorization": f"Bearer {ADMIN}"}
    with httpx.Client(base_url=url) as http:
        created = http.post("/dev/buddies", headers=admin, json={"buddy_id": "fuzz"}).json()
        conversations = {
            kind: http.post(
                "/dev/conversations",
                headers=admin,
                json={
                    "identity": "fuzz",
                    "kind": kind,
                    "members": [{"name": "a"}, {"name": "b"}][: 1 if kind == "private" else 2],
                },
            ).json()["id"]
            for kind in ("private", "group")
        }
    yield _Platform(url, created["token"], conversations)
    server.should_exit = True
    thread.join(10)


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: Any, platform: _Platform) -> None:
    token = ADMIN if case.path.startswith("/dev") else platform.token
    headers = dict(case.headers or {})
    headers["Authorization"] = f"Bearer {token}"
    if "X-Conversation-Id" in headers or case.path.startswith("/internal"):
        headers["X-Conversation-Id"] = platform.conversations[
            "private" if len(str(case.body)) % 2 else "group"
        ]
    case.headers = headers
    response = case.call(base_url=platform.url)
    assert response.status_code < 500, (
        f"{case.method} {case.path}: {response.status_code} {response.text[:300]}"
    )
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body.get("reason"), str), body
        assert body["reason"]
    case.validate_response(response, checks=[status_code_conformance, content_type_conformance])
