"""Hostile protocol inputs: non-finite numbers, loose types, paths that are not UTF-8,
nesting the readers cannot follow — each a clear 400 naming what and where, nothing stored.
And the document: every status an operation answers, links, 405 with ``Allow``."""

from __future__ import annotations

from typing import Any

import pytest

from buddy.platform.dev.app import create_app
from buddy.platform.limits import JSON_DEPTH_MAX, STEP_CONTENT_BYTES, STEP_CONTENT_DEPTH
from tests.platform import conftest as platform_fixtures
from tests.platform.conftest import Dev

pytestmark = pytest.mark.anyio
dev = platform_fixtures.dev  # the dev platform fixture of tests/platform, used here too

JSON = {"Content-Type": "application/json"}


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


async def _event(dev: Dev) -> tuple[dict[str, str], str]:
    conv = await dev.conversation()
    said = await dev.http.post(
        f"/dev/conversations/{conv['id']}/messages", headers=dev.admin, json={"text": "hi"}
    )
    return dev.auth(conv["id"]), said.json()["event_id"]


# ---------------------------------------------------------------- 8: non-finite numbers


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400"])
async def test_non_finite_covers_until_is_400_and_nothing_stored(dev: Dev, number: bytes) -> None:
    headers, _ = await _event(dev)
    body = b'{"text": "s", "covers_until": ' + number + b"}"
    response = await dev.http.put(
        "/internal/v1/conversation/summary", headers={**headers, **JSON}, content=body
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_request"
    assert "covers_until is not a finite number" in response.json()["reason"]
    assert (
        await dev.http.get("/internal/v1/conversation/summary", headers=headers)
    ).status_code == 404


async def test_finite_covers_until_is_kept(dev: Dev) -> None:
    headers, _ = await _event(dev)
    body = b'{"text": "s", "covers_until": 1.7976931348623157e308}'  # the largest double
    response = await dev.http.put(
        "/internal/v1/conversation/summary", headers={**headers, **JSON}, content=body
    )
    assert response.status_code == 200
    again = await dev.http.get("/internal/v1/conversation/summary", headers=headers)
    assert again.json()["covers_until"] == 1.7976931348623157e308


@pytest.mark.parametrize("number", [b"NaN", b"1e400"])
async def test_non_finite_numbers_inside_free_json_are_400(dev: Dev, number: bytes) -> None:
    headers, event_id = await _event(dev)
    body = (
        b'{"event_id": "' + event_id.encode() + b'", "steps": [{"type": "tool_call",'
        b' "content": {"a": [1, ' + number + b"]}}]}"
    )
    response = await dev.http.post(
        "/internal/v1/conversation/turns", headers={**headers, **JSON}, content=body
    )
    assert response.status_code == 400
    assert "steps[0].content.a[1] is not a finite number" in response.json()["reason"]


async def test_non_finite_query_number_is_400(dev: Dev) -> None:
    headers, _ = await _event(dev)
    for bad in ("nan", "inf", "-inf"):
        response = await dev.http.get(
            f"/internal/v1/conversation/turns?after={bad}", headers=headers
        )
        assert response.status_code == 400, bad
    ok = await dev.http.get("/internal/v1/conversation/turns?after=0.5", headers=headers)
    assert ok.status_code == 200


# ---------------------------------------------------------------- 9: strict types


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/dev/clock", {"advance_seconds": False}, "advance_seconds"),
        ("/dev/clock", {"advance_seconds": "60"}, "advance_seconds"),
    ],
)
async def test_loose_types_on_dev_endpoints_are_400(
    dev: Dev, path: str, body: dict[str, Any], field: str
) -> None:
    response = await dev.http.post(path, headers=dev.admin, json=body)
    assert response.status_code == 400
    assert response.json()["reason"].startswith(field)
    ok = await dev.http.post(path, headers=dev.admin, json={"advance_seconds": 0})
    assert ok.status_code == 200


async def test_loose_types_in_a_turn_commit_are_400(dev: Dev) -> None:
    headers, event_id = await _event(dev)
    for bad in (0, 1, "true", None):
        response = await dev.http.post(
            "/internal/v1/conversation/turns",
            headers=headers,
            json={"event_id": event_id, "reply": "x", "data_read": bad},
        )
        assert response.status_code == 400, bad
        assert response.json()["reason"].startswith("data_read")
    ok = await dev.http.post(
        "/internal/v1/conversation/turns",
        headers=headers,
        json={"event_id": event_id, "reply": "x", "data_read": False},
    )
    assert ok.json()["status"] == "committed"


async def test_loose_covers_until_is_400(dev: Dev) -> None:
    headers, _ = await _event(dev)
    for bad in (False, "12", None):
        response = await dev.http.put(
            "/internal/v1/conversation/summary",
            headers=headers,
            json={"text": "s", "covers_until": bad},
        )
        assert response.status_code == 400, bad
    ok = await dev.http.put(
        "/internal/v1/conversation/summary", headers=headers, json={"text": "s", "covers_until": 3}
    )
    assert ok.json()["covers_until"] == 3


@pytest.mark.parametrize("at", [0, 1796000000, 1.5, True, None])
async def test_trigger_at_must_be_text(dev: Dev, at: Any) -> None:
    conv = await dev.conversation()
    response = await dev.http.put(
        "/internal/v1/proactive/subscriptions/weekly",
        headers=dev.auth(conv["id"]),
        json={"title": "t", "reason": "r", "trigger": {"type": "schedule", "at": at}},
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "subscription_invalid"
    assert "trigger.at" in response.json()["reason"]
    listed = await dev.http.get(
        "/internal/v1/proactive/subscriptions", headers=dev.auth(conv["id"])
    )
    assert listed.json()["subscriptions"] == []
    ok = await dev.http.put(
        "/internal/v1/proactive/subscriptions/weekly",
        headers=dev.auth(conv["id"]),
        json={
            "title": "t",
            "reason": "r",
            "trigger": {"type": "schedule", "at": "2030-01-01T08:00:00+08:00"},
        },
    )
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/dev/data-access/grants", {"granted": 0}),
        ("/dev/data-access/grants", {"granted": "true"}),
    ],
)
async def test_loose_booleans_on_grants_are_400(dev: Dev, path: str, body: dict[str, Any]) -> None:
    conv = await dev.conversation()
    member = conv["members"][0]["member_id"]
    full = {"identity": dev.buddy_id, "member_id": member, "dataset": "health.sleep", **body}
    response = await dev.http.put("/dev/grants", headers=dev.admin, json=full)
    assert response.status_code == 400
    assert "granted" in response.json()["reason"]


# ---------------------------------------------------------------- 10: paths not UTF-8


@pytest.mark.parametrize("raw", ["%FF", "%ED%A0%80", "a%C3", "%C0%AF", "ok%80"])
async def test_a_key_that_is_not_utf8_is_400_with_the_key_code(dev: Dev, raw: str) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    put = await dev.http.put(f"/internal/v1/memory/{raw}", headers=headers, json={"text": "x"})
    assert put.status_code == 400
    assert put.json()["code"] == "memory_key_invalid"
    assert "not UTF-8" in put.json()["reason"]
    deleted = await dev.http.delete(f"/internal/v1/memory/{raw}", headers=headers)
    assert deleted.json()["code"] == "memory_key_invalid"
    assert (await dev.http.get("/internal/v1/memory", headers=headers)).json()["entries"] == []


async def test_utf8_keys_still_work_and_do_not_collide(dev: Dev) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    for raw in ("%EF%BF%BD", "%E8%AE%B0"):  # U+FFFD itself, and 记
        assert (
            await dev.http.put(f"/internal/v1/memory/{raw}", headers=headers, json={"text": raw})
        ).status_code == 200
    entries = (await dev.http.get("/internal/v1/memory", headers=headers)).json()["entries"]
    assert sorted(e["key"] for e in entries) == ["记", "\ufffd"]


async def test_other_paths_and_queries_not_utf8_are_400(dev: Dev) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    sub = await dev.http.delete("/internal/v1/proactive/subscriptions/%FF", headers=headers)
    assert sub.json()["code"] == "subscription_invalid"
    widget = await dev.http.get("/internal/v1/widgets/%FF", headers=headers)
    assert (widget.status_code, widget.json()["code"]) == (400, "path_invalid")
    query = await dev.http.get("/dev/events?identity=%FF", headers=dev.admin)
    assert (query.status_code, query.json()["code"]) == (400, "invalid_request")


# ---------------------------------------------------------------- 7 and 12: nesting


@pytest.mark.parametrize(
    ("depth", "status"), [(STEP_CONTENT_DEPTH, 200), (STEP_CONTENT_DEPTH + 1, 400), (200, 400)]
)
async def test_step_content_depth(dev: Dev, depth: int, status: int) -> None:
    headers, event_id = await _event(dev)
    response = await dev.http.post(
        "/internal/v1/conversation/turns",
        headers=headers,
        json={
            "event_id": event_id,
            "reply": "x",
            "steps": [{"type": "tool_call", "tool": "t", "content": nested(depth)}],
        },
    )
    assert response.status_code == status, response.text[:300]
    if status == 400:
        assert "steps[0].content" in response.json()["reason"]
        assert len(response.json()["reason"]) < 400  # the path is shortened
    turns = await dev.http.get("/internal/v1/conversation/turns", headers=headers)
    assert turns.status_code == 200
    assert len(turns.json()) == (1 if status == 200 else 0)


@pytest.mark.parametrize(
    ("size", "status"), [(STEP_CONTENT_BYTES, 200), (STEP_CONTENT_BYTES + 1, 400)]
)
async def test_step_content_size(dev: Dev, size: int, status: int) -> None:
    headers, event_id = await _event(dev)
    content = "a" * (size - 2)  # the JSON string's quotes count
    response = await dev.http.post(
        "/internal/v1/conversation/turns",
        headers=headers,
        json={"event_id": event_id, "steps": [{"type": "tool_result", "content": content}]},
    )
    assert response.status_code == status
    if status == 400:
        assert response.json()["code"] == "step_content_too_large"
        assert str(STEP_CONTENT_BYTES) in response.json()["reason"]


@pytest.mark.parametrize(
    ("depth", "status"), [(JSON_DEPTH_MAX - 3, 200), (JSON_DEPTH_MAX, 400), (450, 400)]
)
async def test_dev_data_items_nesting(dev: Dev, depth: int, status: int) -> None:
    # items → item → field: the field's value starts three levels into the body.
    conv = await dev.conversation()
    member = conv["members"][0]["member_id"]
    response = await dev.http.put(
        "/dev/data",
        headers=dev.admin,
        json={"member_id": member, "dataset": "health.sleep", "items": [{"x": nested(depth)}]},
    )
    assert response.status_code != 500
    if status == 400:
        assert response.status_code == 400
        assert "deeper than" in response.json()["reason"]


async def test_a_body_deeper_than_python_can_parse_is_400(dev: Dev) -> None:
    body = b"[" * 200_000 + b"]" * 200_000
    response = await dev.http.post("/dev/clock", headers={**dev.admin, **JSON}, content=body)
    assert response.status_code == 400


# ---------------------------------------------------------------- 11: the document


def test_every_operation_documents_its_errors() -> None:
    schema = create_app(":memory:").openapi()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            for status in ("400", "401"):
                assert status in responses, (method, path, status)
            if "requestBody" in operation:
                assert "413" in responses, (method, path)
            for status, response in responses.items():
                if status.startswith("4"):
                    ref = response["content"]["application/json"]["schema"]["$ref"]
                    assert ref == "#/components/schemas/Error"
    record = schema["paths"]["/internal/v1/widgets/{widget_id}/{module}/{record_id}"]["put"]
    assert {"403", "404", "409"} <= set(record["responses"])


def test_links_chain_create_to_read_update_delete() -> None:
    schema = create_app(":memory:").openapi()
    ids = {
        op["operationId"]: (method, path)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
    }
    created = schema["paths"]["/internal/v1/widgets"]["post"]["responses"]["201"]["links"]
    targets = {ids[link["operationId"]] for link in created.values()}
    assert ("get", "/internal/v1/widgets/{widget_id}") in targets
    assert ("delete", "/internal/v1/widgets/{widget_id}") in targets
    for path, ops in schema["paths"].items():
        for op in ops.values():
            for response in op["responses"].values():
                for link in response.get("links", {}).values():
                    method, target = ids[link["operationId"]]
                    names = {
                        p["name"] for p in schema["paths"][target][method].get("parameters", [])
                    }
                    assert set(link["parameters"]) <= names, (path, target)


async def test_405_names_every_allowed_method(dev: Dev) -> None:
    conv = await dev.conversation()
    response = await dev.http.patch("/internal/v1/memory/k", headers=dev.auth(conv["id"]))
    assert response.status_code == 405
    assert response.headers["Allow"] == "PUT, DELETE"
    assert response.json()["code"] == "method_not_allowed"
    assert "PUT, DELETE" in response.json()["reason"]
    listed = await dev.http.patch("/internal/v1/memory", headers=dev.auth(conv["id"]))
    assert listed.headers["Allow"] == "GET, POST"
