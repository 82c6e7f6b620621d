"""The `conversation` object over real sockets: every capability through the client,
limits surfacing as PlatformError with the platform's status and reason."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import buddy
from buddy.errors import PlatformError
from buddy.platform.client import HttpPlatformClient
from buddy.platform.conversation import Conversation
from tests.conftest import REPO
from tests.platform.conftest import Dev

pytestmark = pytest.mark.anyio

MENU = {
    "type": "menu",
    "title": "菜单",
    "modules": {
        "dishes": {
            "title": "菜",
            "record": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "day": {"type": "integer", "minimum": 1},
                },
                "required": ["name", "day"],
                "additionalProperties": False,
            },
        }
    },
}


@pytest.fixture
async def client(live: Dev) -> AsyncIterator[HttpPlatformClient]:
    client = HttpPlatformClient(live.url, live.token)
    yield client
    await client.close()


async def _conversation(
    live: Dev, client: HttpPlatformClient, kind: str = "private"
) -> Conversation:
    info = await live.conversation(kind)
    return Conversation(client, info["id"], kind)  # type: ignore[arg-type]


async def test_memory(live: Dev, client: HttpPlatformClient) -> None:
    conversation = await _conversation(live, client)
    await conversation.memory.write("口味", "不吃辣")
    await conversation.memory.write("人数", "三口之家")
    await conversation.memory.write("口味", "微辣可以")
    entries = await conversation.memory.list()
    assert [(e["key"], e["text"]) for e in entries] == [("人数", "三口之家"), ("口味", "微辣可以")]
    await conversation.memory.delete("人数")
    await conversation.memory.delete("从没写过")
    assert [e["key"] for e in await conversation.memory.list()] == ["口味"]


@pytest.mark.parametrize(
    ("key", "text", "ok"),
    [
        ("k" * 64, "x", True),
        ("k" * 65, "x", False),
        ("a b", "x", False),
        ("a/b", "x", False),
        ("", "x", False),
        ("k", "字" * 5461, True),  # 16383 bytes
        ("k", "字" * 5462, False),  # 16386 bytes
    ],
)
async def test_memory_limits_reach_the_caller(
    live: Dev, client: HttpPlatformClient, key: str, text: str, ok: bool
) -> None:
    conversation = await _conversation(live, client)
    if ok:
        await conversation.memory.write(key, text)
        return
    with pytest.raises(PlatformError) as caught:
        await conversation.memory.write(key, text)
    assert caught.value.status in (400, 404)
    assert caught.value.reason


async def test_widgets(live: Dev, client: HttpPlatformClient) -> None:
    await client.request("PUT", "widget-types", body={"types": [MENU]})
    conversation = await _conversation(live, client)
    created = await conversation.widget.create("menu", "本周菜单", idempotency_key="k1")
    again = await conversation.widget.create("menu", "本周菜单", idempotency_key="k1")
    widget_id = created["id"]
    assert again["id"] == widget_id
    first = await conversation.widget.write_record(
        widget_id, "dishes", "d1", {"name": "红烧肉", "day": 1}
    )
    assert first["revision"] == 1
    second = await conversation.widget.write_record(
        widget_id, "dishes", "d1", {"name": "红烧肉", "day": 2}, expected_revision=1
    )
    assert second["revision"] == 2
    with pytest.raises(PlatformError) as conflict:
        await conversation.widget.write_record(
            widget_id, "dishes", "d1", {"name": "x", "day": 1}, expected_revision=1
        )
    assert conflict.value.status == 409
    with pytest.raises(PlatformError) as mismatch:
        await conversation.widget.write_record(widget_id, "dishes", "d2", {"name": "x"})
    assert mismatch.value.status == 400
    await conversation.widget.rename(widget_id, "下周菜单")
    await conversation.widget.set_presentation(widget_id, summary="七天家常菜", image_media_id="")
    read = await conversation.widget.read(widget_id)
    assert read["title"] == "下周菜单"
    assert read["modules"]["dishes"]["records"][0]["data"] == {"name": "红烧肉", "day": 2}
    module = await conversation.widget.read_module(widget_id, "dishes")
    assert len(module["records"]) == 1
    sent = await conversation.widget.send(widget_id, idempotency_key="s1")
    assert (await conversation.widget.send(widget_id, idempotency_key="s1")) == sent
    assert [w["id"] for w in await conversation.widget.list()] == [widget_id]
    await conversation.widget.delete_record(widget_id, "dishes", "d1")
    await conversation.widget.delete(widget_id)
    assert await conversation.widget.list() == []
    with pytest.raises(PlatformError) as gone:
        await conversation.widget.read(widget_id)
    assert gone.value.status == 404


async def test_data_access(live: Dev, client: HttpPlatformClient) -> None:
    blueprint = buddy.load(REPO / "manifests" / "cardio")
    requirements: list[dict[str, Any]] = [
        {"id": r.id, "purpose": r.purpose} for r in blueprint.sections["data"].requirements
    ]
    await client.request("PUT", "data-access/declaration", body={"requirements": requirements})
    conversation = await _conversation(live, client)
    info = await client.conversation_info(conversation.id)
    member = info["members"][0]["member_id"]
    (sleep,) = await conversation.data_access.query(["health.sleep"])
    assert sleep["status"] == "notGranted"
    (steps,) = await conversation.data_access.query(["health.steps"])
    assert steps["status"] == "notDeclared"
    grant = {
        "identity": live.buddy_id,
        "member_id": member,
        "dataset": "health.sleep",
        "granted": True,
    }
    assert (await live.http.put("/dev/grants", headers=live.admin, json=grant)).status_code == 200
    (sleep,) = await conversation.data_access.query(["health.sleep"])
    assert sleep["status"] == "available"
    assert sleep["data"]["items"]
    card = await conversation.data_access.request(
        "location", "找附近的跑步路线", idempotency_key="loc-1"
    )
    assert (await conversation.data_access.read_result(card["request_id"]))[
        "status"
    ] == "unavailable"
    answered = await live.http.post(
        f"/dev/data-access/requests/{card['request_id']}/answer",
        headers=live.admin,
        json={"granted": True},
    )
    assert answered.status_code == 200, answered.text
    result = await conversation.data_access.read_result(card["request_id"])
    assert result["status"] == "available"
    with pytest.raises(PlatformError) as too_many:
        await conversation.data_access.query(["health.sleep"] * 9)
    assert too_many.value.status == 400


async def test_consent_cards_are_private_only(live: Dev, client: HttpPlatformClient) -> None:
    declaration = {"requirements": [{"id": "health.sleep", "purpose": "作息"}]}
    await client.request("PUT", "data-access/declaration", body=declaration)
    group = await _conversation(live, client, "group")
    with pytest.raises(PlatformError) as caught:
        await group.data_access.request(
            "healthkit", "看看睡眠", idempotency_key="g1", datasets=["health.sleep"]
        )
    assert caught.value.status == 400
    with pytest.raises(PlatformError) as member:
        await group.data_access.query(["health.sleep"])
    assert member.value.status == 400


async def test_proactive(live: Dev, client: HttpPlatformClient) -> None:
    conversation = await _conversation(live, client)
    request = {
        "title": "跑后复盘",
        "reason": "跑完步帮你看看这次训练",
        "trigger": "workout.completed",
        "cooldown_minutes": 60,
    }
    created = await conversation.proactive.subscribe("post-run", request)
    assert (created["key"], created["status"], created["daily_limit"]) == ("post-run", "active", 3)
    await conversation.proactive.subscribe("weekly", {**request, "trigger": "sleep.ready"})
    assert [s["key"] for s in await conversation.proactive.list()] == ["post-run", "weekly"]
    assert await conversation.proactive.unsubscribe("weekly") is True
    assert await conversation.proactive.unsubscribe("never") is False
    assert [s["status"] for s in await conversation.proactive.list()] == ["active", "closed"]
    assert await conversation.proactive.unsubscribe_all() == 1
    with pytest.raises(PlatformError) as invalid:
        await conversation.proactive.subscribe("x", {**request, "title": "题" * 101})
    assert invalid.value.status == 400
    assert "100" in invalid.value.reason
    group = await _conversation(live, client, "group")
    with pytest.raises(PlatformError) as private_only:
        await group.proactive.subscribe("x", request)
    assert private_only.value.status == 400
