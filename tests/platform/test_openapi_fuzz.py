"""schemathesis against the dev platform's /openapi.json: no 5xx, every 4xx with a reason,
and every status an operation answers documented in the document (with its error body);
the document as strict as the server (what it calls valid is not refused with 400), and a
405's ``Allow`` listing the methods the document gives its path.

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
import requests
import schemathesis
import uvicorn
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    positive_data_acceptance,
    status_code_conformance,
    unsupported_method,
)

from buddy.platform.dev.app import create_app
from tests.platform.conftest import ADMIN, free_port

schema = schemathesis.openapi.from_dict(create_app(":memory:").openapi())


class _Platform:
    def __init__(self, url: str, token: str, conversations: dict[str, str]) -> None:
        self.url = url
        self.token = token
        self.conversations = conversations
        # One HTTP/1.1 connection kept alive across the cases, as a client of the platform
        # keeps one, instead of a connection per case.
        self.session = requests.Session()


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
    platform = _Platform(url, created["token"], conversations)
    with platform.session:
        yield platform
    server.should_exit = True
    thread.join(10)


def _call(case: Any, platform: _Platform) -> Any:
    token = ADMIN if case.path.startswith("/dev") else platform.token
    headers = dict(case.headers or {})
    headers["Authorization"] = f"Bearer {token}"
    if "X-Conversation-Id" in headers or case.path.startswith("/internal"):
        headers["X-Conversation-Id"] = platform.conversations[
            "private" if len(str(case.body)) % 2 else "group"
        ]
    case.headers = headers
    return case.call(base_url=platform.url, session=platform.session)


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: Any, platform: _Platform) -> None:
    response = _call(case, platform)
    assert response.status_code < 500, (
        f"{case.method} {case.path}: {response.status_code} {response.text[:300]}"
    )
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body.get("reason"), str), body
        assert body["reason"]
    case.validate_response(response, checks=[status_code_conformance, content_type_conformance])


# Refusals of data the document calls valid that no JSON Schema can prevent: each depends on
# what is stored (the conversation the header names, what was declared) or relates items of
# a list by one field. Each is stated in its operation's description; for these codes only,
# on these operations only, the positive-data check is skipped.
_BEYOND_SCHEMA: dict[tuple[str, str], dict[str, str]] = {
    ("PUT", "/internal/v1/proactive/subscriptions/{key}"): {
        "proactive_private_only": "state: the header names a group conversation",
    },
    ("PUT", "/internal/v1/memory/{key}"): {
        "memory_full": "state: the conversation already holds the most entries",
        "memory_total_too_large": "state: the conversation's memory is full in bytes",
        "memory_text_too_long": "a limit in UTF-8 bytes; the document's maxLength counts"
        " characters",
    },
    ("POST", "/internal/v1/memory"): {
        "memory_full": "state: the conversation already holds the most entries",
        "memory_total_too_large": "state: the conversation's memory is full in bytes",
        "memory_text_too_long": "a limit in UTF-8 bytes; the document's maxLength counts"
        " characters",
    },
    ("POST", "/internal/v1/data-access/query"): {
        "member_required": "state: a group conversation needs member_id",
        "member_not_in_conversation": "state: who is a member",
    },
    ("POST", "/internal/v1/data-access/requests"): {
        "consent_private_only": "state: the header names a group conversation",
        "dataset_not_declared": "state: what the buddy declared",
    },
    ("PUT", "/dev/grants"): {"dataset_not_declared": "state: what the buddy declared"},
    ("PUT", "/dev/group-settings"): {
        "group_only": "state: the conversation is private",
        "member_not_in_conversation": "state: who is a member",
    },
    ("POST", "/internal/v1/widgets"): {
        "widget_type_unknown": "state: the widget types the buddy declared",
    },
    ("PUT", "/internal/v1/widget-types"): {
        "widget_type_duplicate": "relates items of a list by one field",
        "widget_schema_invalid": "validity by the Draft 2020-12 meta-schema, named but not inlined",
    },
    ("POST", "/dev/conversations"): {"member_duplicate": "relates items of a list by one field"},
}


@schema.parametrize()
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
def test_schema_as_strict_as_server(case: Any, platform: _Platform) -> None:
    """Data the document calls valid is not refused with 400 (every constraint the server
    enforces is in the document), and a method the document does not list for a path is
    answered 405 with an ``Allow`` of exactly the methods it lists."""
    response = _call(case, platform)
    checks = [unsupported_method, allow_header_conformance]
    beyond = _BEYOND_SCHEMA.get((case.method.upper(), case.path), {})
    if response.status_code != 400 or response.json().get("code") not in beyond:
        checks.append(positive_data_acceptance)
    case.validate_response(response, checks=checks)
