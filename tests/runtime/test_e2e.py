"""The example buddies end to end: dev platform over real sockets, scripted model."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import buddy
from buddy.capabilities.data.scenario import answer_card
from buddy.models.base import ModelRequest, ModelResponse
from buddy.runtime import history as history_module
from buddy.testing import FunctionModel, TestModel, call
from buddy.testing.local import LocalPlatform, running_buddy
from tests.conftest import REPO

pytestmark = pytest.mark.anyio

AUNT = buddy.load(REPO / "manifests" / "aunt-tu")
CARDIO = buddy.load(REPO / "manifests" / "cardio")


async def _setup(
    platform: LocalPlatform, name: str, kind: str = "private", members: list[str] | None = None
) -> tuple[str, dict[str, Any]]:
    tokens = await platform.register(name)
    conv = await platform.conversation(f"{name}-dev", kind, members)
    return tokens["dev_token"], conv


async def _noon(platform: LocalPlatform) -> None:
    """Move the platform clock to the next 12:00 in Shanghai (outside every quiet hour)."""
    now = (await platform.dev("GET", "/clock"))["time"]
    local = datetime.fromtimestamp(now, UTC).astimezone(ZoneInfo("Asia/Shanghai"))
    target = local.replace(hour=12, minute=0, second=0, microsecond=0)
    if target <= local:
        target += timedelta(days=1)
    await platform.dev("POST", "/clock", json={"advance_seconds": (target - local).total_seconds()})


async def test_custom_declarative_and_platform_tools(platform: LocalPlatform) -> None:
    token, conv = await _setup(platform, "aunt-tu")
    model = TestModel(
        [
            [call("plan_menu", {"people": 3, "days": 2, "taste": "清淡"}), call("resource_list")],
            call("remember", {"topic": "口味", "text": "家里人口味清淡"}),
            "好嘞，两天的菜单排好了。",
        ]
    )
    async with running_buddy(platform, AUNT, model, token):
        event = await platform.say(conv["id"], "帮我排两天菜单")
        await platform.wait_acked("aunt-tu-dev", event)
    model.assert_complete()
    said = [
        m["body"].get("text")
        for m in await platform.transcript(conv["id"])
        if m["sender"] == "buddy"
    ]
    assert said == ["好嘞，两天的菜单排好了。"]
    (turn,) = await platform.turns(conv["id"])
    kinds = [(s["type"], s.get("tool")) for s in turn["steps"]]
    assert kinds[:4] == [
        ("tool_call", "plan_menu"),
        ("tool_call", "resource_list"),
        ("tool_result", "plan_menu"),
        ("tool_result", "resource_list"),
    ]
    assert "第 1 天" in turn["steps"][2]["content"]
    assert "recipes/hongshao-rou.md" in turn["steps"][3]["content"]
    # The plan_menu request the model made next saw both results, in the order it asked.
    second = model.requests[1].messages
    assert [m.name for m in second if m.role == "tool"] == ["plan_menu", "resource_list"]
    memory = await platform.http.get(
        "/internal/v1/memory",
        headers={"Authorization": f"Bearer {token}", "X-Conversation-Id": conv["id"]},
    )
    assert memory.json()["entries"][0] == {
        **memory.json()["entries"][0],
        "key": "口味",
        "text": "家里人口味清淡",
    }


async def test_question_card_and_option_click(platform: LocalPlatform) -> None:
    token, conv = await _setup(platform, "aunt-tu")
    model = TestModel(
        [
            call(
                "ask_question",
                {"question": "几个人吃？", "options": ["一个人", "两个人", "一家三口"]},
            ),
            "一家三口，那我按三个人排。",
        ]
    )
    async with running_buddy(platform, AUNT, model, token):
        event = await platform.say(conv["id"], "帮我排菜单")
        await platform.wait_acked("aunt-tu-dev", event)
        card = next(m for m in await platform.transcript(conv["id"]) if m["kind"] == "question")
        assert card["body"]["options"] == ["一个人", "两个人", "一家三口"]
        click = await platform.click(conv["id"], card["id"], "一家三口")
        await platform.wait_acked("aunt-tu-dev", click)
    model.assert_complete()
    assert model.requests[1].messages[-1].content == "一家三口"
    said = [
        m["body"].get("text") for m in await platform.transcript(conv["id"]) if m["kind"] == "text"
    ]
    assert said == ["帮我排菜单", "一家三口", "一家三口，那我按三个人排。"]


async def test_widget_written_and_sent(platform: LocalPlatform) -> None:
    token, conv = await _setup(platform, "aunt-tu")
    created: dict[str, str] = {}

    def script(request: ModelRequest) -> ModelResponse:
        step = len([m for m in request.messages if m.role == "tool"])
        if step == 0:
            return ModelResponse(
                tool_calls=(call("widget_create", {"type": "menu", "title": "两天菜单"}),)
            )
        if step == 1:
            created["id"] = json.loads(request.messages[-1].content)["id"]
            record = {"name": "红烧肉", "day": 1, "meal": "晚"}
            return ModelResponse(
                tool_calls=(
                    call(
                        "widget_write_record",
                        {
                            "widget_id": created["id"],
                            "module": "dishes",
                            "record_id": "d1",
                            "data": record,
                        },
                    ),
                )
            )
        if step == 2:
            return ModelResponse(tool_calls=(call("widget_send", {"widget_id": created["id"]}),))
        return ModelResponse(text="菜单发给你了。")

    async with running_buddy(platform, AUNT, FunctionModel(script), token):
        event = await platform.say(conv["id"], "做个菜单小挂件")
        await platform.wait_acked("aunt-tu-dev", event)
    kinds = [m["kind"] for m in await platform.transcript(conv["id"])]
    assert kinds == ["text", "widget", "text"]
    view = await platform.dev("GET", f"/conversations/{conv['id']}/widgets")
    widget = view["widgets"][0] if isinstance(view, dict) else view[0]
    assert widget["modules"]["dishes"]["records"][0]["data"]["name"] == "红烧肉"


async def test_group_messages_carry_the_member_prefix(platform: LocalPlatform) -> None:
    token, conv = await _setup(platform, "aunt-tu", "group", ["小李", "小王"])
    member = conv["members"][0]
    model = TestModel(["收到。"])
    async with running_buddy(platform, AUNT, model, token):
        event = await platform.say(conv["id"], "今晚吃啥", member["member_id"])
        await platform.wait_acked("aunt-tu-dev", event)
    assert (
        model.requests[0].messages[-1].content
        == f"[{member['name']} #{member['member_id']}] 今晚吃啥"
    )
    assert "group" in model.requests[0].system or "群" in model.requests[0].system


async def test_proactive_turns_speak_skip_and_hooks_deny_writes(platform: LocalPlatform) -> None:
    token, conv = await _setup(platform, "cardio")
    member = conv["members"][0]["member_id"]
    await _noon(platform)
    model = TestModel(
        [
            "在呢。",  # first message builds the conversation and creates post-run
            call(
                "widget_write_record",
                {"widget_id": "w", "module": "runs", "record_id": "r", "data": {}},
            ),
            "跑完了？今天配速不错。",
            "[[skip]]",
        ]
    )
    async with running_buddy(platform, CARDIO, model, token):
        event = await platform.say(conv["id"], "嗨")
        await platform.wait_acked("cardio-dev", event)
        subscriptions = await platform.dev(
            "GET", "/proactive/subscriptions", params={"identity": "cardio-dev"}
        )
        keys = {
            s["key"]
            for s in (
                subscriptions["subscriptions"] if isinstance(subscriptions, dict) else subscriptions
            )
        }
        assert {"weekly-review", "post-run"} <= keys
        assert "sleep-check" not in keys  # manual: only code or the model turns it on
        await platform.dev(
            "POST",
            "/triggers",
            json={"identity": "cardio-dev", "member_id": member, "type": "workout.completed"},
        )
        await platform.wait_acked("cardio-dev")
        await platform.dev("POST", "/clock", json={"advance_seconds": 3 * 3600})
        await platform.dev(
            "POST",
            "/triggers",
            json={"identity": "cardio-dev", "member_id": member, "type": "workout.completed"},
        )
        await platform.wait_acked("cardio-dev")
    model.assert_complete()
    denied = model.requests[2].messages[-1]
    assert denied.role == "tool" and denied.is_error
    assert "主动服务的回合只看不写" in denied.content
    assert "[[skip]]" in model.requests[1].system
    said = [
        m["body"]["text"] for m in await platform.transcript(conv["id"]) if m["sender"] == "buddy"
    ]
    assert said == ["在呢。", "跑完了？今天配速不错。"]  # the skipped turn showed nothing
    turns = await platform.turns(conv["id"])
    assert [t["proactive"] for t in turns] == [False, True, True]
    assert turns[2]["reply"] is None


async def test_consent_flow(platform: LocalPlatform) -> None:
    token, conv = await _setup(platform, "cardio")
    model = TestModel(
        [
            call("data_access_query", {"datasets": ["health.sleep"]}),
            call(
                "data_access_request",
                {
                    "kind": "healthkit",
                    "reason": "看看你最近睡得怎么样",
                    "datasets": ["health.sleep"],
                },
            ),
            call("data_access_query", {"datasets": ["health.sleep"]}),
            "你最近睡得还行，今天可以正常练。",
        ]
    )
    async with running_buddy(platform, CARDIO, model, token):
        event = await platform.say(conv["id"], "我今天能练吗")
        await platform.wait_acked("cardio-dev", event)
        card = next(m for m in await platform.transcript(conv["id"]) if m["kind"] == "consent")
        assert json.loads(model.requests[1].messages[-1].content)[0]["status"] == "notGranted"
        await answer_card(platform, card["body"]["request_id"], True)
        await platform.wait_acked("cardio-dev")
    model.assert_complete()
    assert "[授权卡结果] 用户同意" in model.requests[2].messages[-1].content
    result = json.loads(model.requests[3].messages[-1].content)
    assert result[0]["status"] == "available"
    turns = await platform.turns(conv["id"])
    assert turns[1]["data_read"] is True
    assert turns[1]["steps"][1]["content"] == {"health.sleep": "available"}


async def test_compaction_writes_a_summary_that_a_rebuilt_conversation_sees(
    platform: LocalPlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_module, "COMPACT_AFTER_TURNS", 3)
    monkeypatch.setattr(history_module, "KEEP_RECENT_TURNS", 1)
    token, conv = await _setup(platform, "aunt-tu")
    async with running_buddy(platform, AUNT, TestModel([f"回复{i}" for i in range(6)]), token):
        for i in range(6):
            event = await platform.say(conv["id"], f"第{i}句")
            await platform.wait_acked("aunt-tu-dev", event)
    summary = await platform.http.get(
        "/internal/v1/conversation/summary",
        headers={"Authorization": f"Bearer {token}", "X-Conversation-Id": conv["id"]},
    )
    assert summary.status_code == 200
    text = summary.json()["text"]
    assert "回复1" in text
    assert text.count("第0句") == 1  # a second compaction adds to the summary, no repeats
    assert "第4句" in text
    rebuilt = TestModel(["记得。"])
    async with running_buddy(platform, AUNT, rebuilt, token):
        event = await platform.say(conv["id"], "还记得吗")
        await platform.wait_acked("aunt-tu-dev", event)
    request = rebuilt.requests[0]
    assert "之前聊过的内容" in request.system and "第0句" in request.system
    assert [m.content for m in request.messages if m.role == "user"] == ["第5句", "还记得吗"]


async def _subscriptions(platform: LocalPlatform) -> dict[str, dict[str, Any]]:
    listed = await platform.dev(
        "GET", "/proactive/subscriptions", params={"identity": "cardio-dev"}
    )
    items = listed["subscriptions"] if isinstance(listed, dict) else listed
    return {s["key"]: s for s in items}


async def test_declared_subscriptions_follow_the_manifest_but_respect_closing(
    platform: LocalPlatform,
) -> None:
    token, conv = await _setup(platform, "cardio")
    model = TestModel(
        [
            "在。",
            call("proactive_unsubscribe", {"key": "post-run"}),
            "好，跑后小结关了。",
            call("proactive_subscribe", {"key": "sleep-check"}),
            "睡眠提醒开了。",
            "又见面了。",
        ]
    )
    async with running_buddy(platform, CARDIO, model, token):
        for text in ("嗨", "别在我跑完找我了", "睡得差提醒我"):
            event = await platform.say(conv["id"], text)
            await platform.wait_acked("cardio-dev", event)
    subscriptions = await _subscriptions(platform)
    assert subscriptions["post-run"]["status"] == "closed"
    assert subscriptions["sleep-check"]["status"] == "active"
    assert subscriptions["sleep-check"]["title"] == "睡眠提醒"  # the manifest's fields
    # A rebuilt conversation (new process) with a changed declaration: the active one is
    # updated, the closed one stays closed.
    proactive = dataclasses.replace(
        CARDIO.sections["proactive"],
        subscriptions=tuple(
            dataclasses.replace(s, daily_limit=5) if s.key in ("weekly-review", "post-run") else s
            for s in CARDIO.sections["proactive"].subscriptions
        ),
    )
    changed = dataclasses.replace(CARDIO, sections={**CARDIO.sections, "proactive": proactive})
    async with running_buddy(platform, changed, model, token):
        event = await platform.say(conv["id"], "我回来了")
        await platform.wait_acked("cardio-dev", event)
    model.assert_complete()
    subscriptions = await _subscriptions(platform)
    assert subscriptions["weekly-review"]["daily_limit"] == 5
    assert subscriptions["post-run"]["status"] == "closed"
    assert subscriptions["post-run"]["daily_limit"] == 2


async def test_messages_arriving_mid_turn_wait_their_turn(platform: LocalPlatform) -> None:
    token, conv = await _setup(platform, "aunt-tu")
    gate = asyncio.Event()

    async def slow(request: ModelRequest) -> ModelResponse:
        if request.messages[-1].content == "一":
            await gate.wait()
        return ModelResponse(text=f"回{request.messages[-1].content}")

    async with running_buddy(platform, AUNT, FunctionModel(slow), token):
        first = await platform.say(conv["id"], "一")
        second = await platform.say(conv["id"], "二")
        await asyncio.sleep(0.2)
        gate.set()
        await platform.wait_acked("aunt-tu-dev", second)
        await platform.wait_acked("aunt-tu-dev", first)
    said = [(m["sender"], m["body"]["text"]) for m in await platform.transcript(conv["id"])]
    assert said[-2:] == [("buddy", "回一"), ("buddy", "回二")]


async def test_an_idle_conversation_is_recycled_and_rebuilt(platform: LocalPlatform) -> None:
    token, conv = await _setup(platform, "aunt-tu")
    model = TestModel(["一", "二"])
    async with running_buddy(platform, AUNT, model, token) as server:
        server.idle_seconds = 0.2
        event = await platform.say(conv["id"], "第一句")
        await platform.wait_acked("aunt-tu-dev", event)
        await asyncio.sleep(0.5)
        assert conv["id"] not in server.sessions
        event = await platform.say(conv["id"], "第二句")
        await platform.wait_acked("aunt-tu-dev", event)
    assert [m.content for m in model.requests[1].messages] == ["第一句", "一", "第二句"]
