"""Model faults seen by a user: whole turns through the dev platform, the model a real
OpenAI-compatible client talking to a scripted provider on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from buddy.models.registry import resolve
from buddy.runtime.loop import MODEL_FAILURE
from buddy.testing.local import LocalPlatform, running_buddy
from tests.faults.conftest import (
    API_KEY,
    IDENTITY,
    Provider,
    buddy_said,
    calls,
    fails,
    says,
    write_project,
)

pytestmark = pytest.mark.anyio


async def _turn(platform: LocalPlatform, project: Path, provider: Provider, fallback: bool) -> str:
    """One user message answered by the project's buddy; the conversation id."""
    blueprint = write_project(project, provider.url, fallback=fallback)
    token = (await platform.register("faulty"))["dev_token"]
    conv = await platform.conversation(IDENTITY)
    async with running_buddy(platform, blueprint, resolve(blueprint.model, env=API_KEY), token):
        event = await platform.say(conv["id"], "你好")
        await platform.wait_acked(IDENTITY, event, timeout=20)
    turns = await platform.turns(conv["id"])
    assert [t["event_id"] for t in turns] == [event]  # one turn, committed once
    return str(conv["id"])


async def test_a_429_storm_that_never_ends_ends_in_the_model_failure_message(
    platform: LocalPlatform, project: Path, provider: Provider
) -> None:
    """Endless 429 (Retry-After 0.3 s): 3 spaced attempts, then the model-failure message."""
    provider.answer(*[fails(429, retry_after="0.3")] * 10)  # more than will be asked
    started = asyncio.get_running_loop().time()
    conv = await _turn(platform, project, provider, fallback=False)
    assert asyncio.get_running_loop().time() - started < 10
    assert await buddy_said(platform, conv) == [MODEL_FAILURE]
    assert len(provider.received) == 3
    gaps = [b - a for a, b in zip(provider.arrived, provider.arrived[1:], strict=False)]
    assert all(gap >= 0.3 for gap in gaps), gaps


async def test_a_model_failing_with_5xx_hands_the_turn_to_its_fallback(
    platform: LocalPlatform, project: Path, provider: Provider
) -> None:
    """The model answers 500 to all 3 attempts: the user reads the fallback model's reply."""
    provider.answer(*[fails(500, retry_after="0.05")] * 3, says("备用模型在此。"))
    conv = await _turn(platform, project, provider, fallback=True)
    assert await buddy_said(platform, conv) == ["备用模型在此。"]
    assert [r.body["model"] for r in provider.received] == ["primary"] * 3 + ["backup"]


@pytest.mark.parametrize(
    ("name", "arguments", "read"),
    [
        ("weather", "{}", "没有这个工具：weather（可用：remember）"),
        ("remember", '{"topic": "口味", "text": ', "参数不是合法的 JSON："),
    ],
    ids=["unknown-tool", "malformed-arguments"],
)
async def test_a_broken_tool_call_is_an_error_result_and_the_user_still_gets_a_reply(
    platform: LocalPlatform,
    project: Path,
    provider: Provider,
    name: str,
    arguments: str,
    read: str,
) -> None:
    """A call to a missing tool, or non-JSON arguments: the model reads an error; one reply."""
    provider.answer(calls(name, arguments), says("换个办法：我直接告诉你。"))
    conv = await _turn(platform, project, provider, fallback=False)
    assert await buddy_said(platform, conv) == ["换个办法：我直接告诉你。"]
    result = provider.received[1].body["messages"][-1]
    assert result["role"] == "tool"
    assert result["content"].startswith(read), result["content"]
