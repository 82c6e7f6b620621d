"""What the rest of a turn may do once user data was read, and who ends a turn with a
consent card — the platform contract's rules (docs/runtime.md §7).

By default only memory writes and question cards are refused after a read; widget writes
and proactive subscriptions run, redacted in the record (the cardio coach reads the
workouts, then writes the training log). ``data: {after_read: strict}`` refuses them too.
A consent card sent from a custom tool's code ends the turn just as the platform tool
does.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

import buddy
from buddy.compile.render import view
from buddy.models.base import ModelRequest, ModelResponse, ToolCall
from buddy.testing import FunctionModel, TestModel, call
from buddy.testing.local import LocalPlatform, running_buddy
from tests.conftest import REPO, Write

pytestmark = pytest.mark.anyio

SLEEP = {"date": "2026-11-29", "asleep_minutes": 412}
LOG_BUDDY = """\
name: logger
model: test
persona:
  prompt: 你好
tools: [data_access_query, widget_create, widget_write_record, proactive_subscribe]
data:
  requirements:
    - {{id: health.sleep, purpose: 看睡眠}}
{after_read}"""
LOG_WIDGET = {
    "title": "日志",
    "modules": {
        "nights": {
            "title": "每晚",
            "record": {
                "type": "object",
                "properties": {"note": {"type": "string"}},
                "required": ["note"],
            },
        }
    },
}


async def _grant(platform: LocalPlatform, identity: str, member: str) -> None:
    grant = {"identity": identity, "member_id": member, "dataset": "health.sleep"}
    await platform.dev("PUT", "/grants", json={**grant, "granted": True})
    await platform.dev(
        "PUT", "/data", json={"member_id": member, "dataset": "health.sleep", "items": [SLEEP]}
    )


def _log_flow(widget_type: str, module: str, record: dict[str, Any]) -> FunctionModel:
    """Read sleep, create a widget, write a record into it, subscribe, then reply."""

    def step(request: ModelRequest) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        last = request.messages[-1]
        if done == 0:
            return _calls(("data_access_query", {"datasets": ["health.sleep"]}))
        if done == 1:
            return _calls(("widget_create", {"type": widget_type, "title": "这周"}))
        if done == 2:
            widget = "refused" if last.is_error else json.loads(last.content)["id"]
            args = {"widget_id": widget, "module": module, "record_id": "r1", "data": record}
            return _calls(("widget_write_record", args))
        if done == 3:
            return _calls(
                (
                    "proactive_subscribe",
                    {
                        "key": "weekly",
                        "title": "周报",
                        "reason": "每周复盘",
                        "trigger": "sleep.ready",
                    },
                )
            )
        return ModelResponse(text="记好了。")

    return FunctionModel(step)


def _calls(*calls: tuple[str, dict[str, Any]]) -> ModelResponse:
    return ModelResponse(
        tool_calls=tuple(
            ToolCall(f"c{n}", name, json.dumps(args, ensure_ascii=False))
            for n, (name, args) in enumerate(calls)
        )
    )


async def _run_log_flow(
    platform: LocalPlatform, blueprint: buddy.Blueprint, name: str, model: FunctionModel
) -> list[dict[str, Any]]:
    tokens = await platform.register(name)
    conv = await platform.conversation(f"{name}-dev")
    async with running_buddy(platform, blueprint, TestModel(["嗨"]), tokens["dev_token"]):
        await platform.wait_acked(f"{name}-dev", await platform.say(conv["id"], "你好"))
    await _grant(platform, f"{name}-dev", conv["members"][0]["member_id"])
    async with running_buddy(platform, blueprint, model, tokens["dev_token"]):
        await platform.wait_acked(f"{name}-dev", await platform.say(conv["id"], "记一下"))
    turn = (await platform.turns(conv["id"]))[-1]
    assert turn["data_read"] is True
    return [s for s in turn["steps"] if s["type"] == "tool_result"]


async def test_cardio_reads_then_writes_its_training_log_by_default(
    platform: LocalPlatform,
) -> None:
    cardio = buddy.load(REPO / "manifests" / "cardio")
    assert cardio.sections["data"].after_read == "platform"
    run = {"date": "2026-11-30", "distance_km": 5, "duration_min": 30}
    results = await _run_log_flow(
        platform, cardio, "cardio", _log_flow("training-log", "runs", run)
    )
    # query, create, write, subscribe: none refused, every later one redacted in the record
    assert [(s["tool"], s.get("is_error", False), s["redacted"]) for s in results] == [
        ("data_access_query", False, False),
        ("widget_create", False, True),
        ("widget_write_record", False, True),
        ("proactive_subscribe", False, True),
    ]


@pytest.mark.parametrize(
    ("after_read", "refused"), [("", False), ("platform", False), ("strict", True)]
)
async def test_after_read_strict_refuses_widget_writes_and_subscriptions(
    platform: LocalPlatform, write: Write, after_read: str, refused: bool
) -> None:
    line = f"  after_read: {after_read}\n" if after_read else ""
    manifest = {
        "buddy.yaml": LOG_BUDDY.format(after_read=line),
        "widgets/log/schema.json": json.dumps(LOG_WIDGET),
    }
    blueprint = buddy.load(write(manifest))
    assert blueprint.sections["data"].after_read == (after_read or "platform")
    model = _log_flow("log", "nights", {"note": "睡得好"})
    results = await _run_log_flow(platform, blueprint, "logger", model)
    errors = [s.get("is_error", False) for s in results[1:]]
    # strict: the create is refused, so the write has no widget (refused too)
    assert errors == [refused, refused, refused]
    shown = view(blueprint)["data"]["after_read"]
    assert shown == (after_read or "platform")


CONSENT_BUDDY = """\
name: asker
model: test
persona:
  prompt: 你好
tools:
  - name: ask_for_sleep
    description: 请对方授权睡眠数据
    parameters: {type: object}
    handler: plugins.asker:ask
data:
  requirements:
    - {id: health.sleep, purpose: 看睡眠}
"""
CONSENT_PLUGIN = """\
async def ask(conversation, params):
    sent = await conversation.data_access.request(
        "healthkit", "想看看你的睡眠", idempotency_key="sleep-1", datasets=["health.sleep"]
    )
    return {"sent": bool(sent)}
"""


async def test_a_consent_card_sent_from_code_ends_the_turn(
    platform: LocalPlatform, write: Write
) -> None:
    blueprint = buddy.load(write({"buddy.yaml": CONSENT_BUDDY, "plugins/asker.py": CONSENT_PLUGIN}))
    tokens = await platform.register("asker")
    conv = await platform.conversation("asker-dev")
    # One step only: before, the model was asked again and its text followed the card.
    model = TestModel([call("ask_for_sleep")])
    async with running_buddy(platform, blueprint, model, tokens["dev_token"]):
        await platform.wait_acked("asker-dev", await platform.say(conv["id"], "帮我看看睡眠"))
    model.assert_complete()
    assert len(model.requests) == 1
    shown = [m["kind"] for m in await platform.transcript(conv["id"]) if m["sender"] == "buddy"]
    assert shown == ["consent"]


LEAKY_BUDDY = """\
name: leaky
model: test
persona:
  prompt: 你好
tools:
  - data_access_query
  - proactive_unsubscribe
  - name: boom
    description: 出错
    parameters: {type: object, properties: {text: {type: string}}}
    handler: plugins.leaky:boom
data:
  requirements:
    - {id: health.sleep, purpose: 看睡眠}
"""
LEAKY_PLUGIN = """\
async def boom(conversation, params):
    raise RuntimeError("the body failed on " + params["text"])
"""


async def test_logs_follow_the_redaction_after_a_read(
    platform: LocalPlatform, write: Write, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: httpx's INFO line carried the subscription key in the URL, and a failing
    # tool body's traceback its arguments — values written after the model saw the data.
    blueprint = buddy.load(write({"buddy.yaml": LEAKY_BUDDY, "plugins/leaky.py": LEAKY_PLUGIN}))
    tokens = await platform.register("leaky")
    conv = await platform.conversation("leaky-dev")
    async with running_buddy(platform, blueprint, TestModel(["嗨"]), tokens["dev_token"]):
        await platform.wait_acked("leaky-dev", await platform.say(conv["id"], "你好"))
    await _grant(platform, "leaky-dev", conv["members"][0]["member_id"])
    secret = "sleep-412-minutes"
    model = TestModel(
        [
            call("proactive_unsubscribe", {"key": "before-the-read"}),
            call("data_access_query", {"datasets": ["health.sleep"]}),
            [call("proactive_unsubscribe", {"key": secret}), call("boom", {"text": secret})],
            "好。",
        ]
    )
    with caplog.at_level(logging.DEBUG):
        async with running_buddy(platform, blueprint, model, tokens["dev_token"]):
            await platform.wait_acked("leaky-dev", await platform.say(conv["id"], "看看"))
    lines = [r.getMessage() + (r.exc_text or "") for r in caplog.records]
    assert not [line for line in lines if secret in line]
    assert any("before-the-read" in line for line in lines)  # nothing is hidden before
    redacted = [line for line in lines if "[redacted: the turn read user data]" in line]
    assert any(line.startswith("HTTP Request: DELETE") for line in redacted)
    assert any("tool boom failed (RuntimeError;" in line for line in redacted)
