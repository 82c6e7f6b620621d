"""Reasoning models through whole turns, against loopback servers that refuse a wrong
request exactly as DeepSeek, Kimi and Anthropic do (tests/models/simulators.py).

Each buddy runs a turn of two sequential tool calls, one parallel pair and a reply, then a
second turn, streamed and in one piece. Before reasoning was passed back, the first
tool-calling step's follow-up was refused (HTTP 400) and every such turn ended in the
model-failure message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

import buddy
from buddy.errors import ModelError
from buddy.models.base import Message, Model, ModelRequest, ModelResponse, ToolCall
from buddy.models.registry import resolve
from buddy.runtime.loop import MODEL_FAILURE, REDACTED
from buddy.testing.local import LocalPlatform, running_buddy
from tests.conftest import Write
from tests.models.simulators import ChatCompletions, Messages, Move, Script, Simulator, signature

pytestmark = pytest.mark.anyio

KEYS = {
    "DEEPSEEK_API_KEY": "sk-deep",
    "MOONSHOT_API_KEY": "sk-moon",
    "ANTHROPIC_API_KEY": "sk-ant",
}
TOOLS = """\
persona:
  prompt: 你是测试用的伙伴，说话简短。
tools:
  - resource_list
  - resource_read
  - name: remember
    uses: memory.write
    description: 记下一件事。
    parameters:
      type: object
      properties:
        topic: {type: string, pattern: "^[^\\\\s/]+$"}
        text: {type: string}
      required: [topic, text]
    key: "{{ topic }}"
    text: "{{ text }}"
    reply: "记下了：{{ topic }}。"
"""
MODELS = {
    "deepseek": "  provider: deepseek\n  name: deepseek-reasoner\n  base_url: {url}/v1\n"
    "  thinking: true\n",
    "kimi": "  provider: moonshot\n  name: kimi-k2-thinking\n  base_url: {url}/v1\n",
    "anthropic": "  provider: anthropic\n  name: claude-sonnet-4-5\n  base_url: {url}\n"
    "  thinking: {{budget_tokens: 2048}}\n",
}


class OnePiece(Model):
    """A model answered in one piece (``request``), never streamed."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name

    async def request(self, request: ModelRequest) -> ModelResponse:
        return await self.inner.request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def simulator(kind: str, moves: list[Move]) -> Simulator:
    if kind == "anthropic":
        return Messages(moves)
    return ChatCompletions(moves, flavour=kind)


def project(write: Write, kind: str, url: str) -> Path:
    manifest = f"name: roundtrip\nmodel:\n{MODELS[kind].format(url=url)}{TOOLS}"
    return write(
        {
            "buddy.yaml": manifest,
            "resources/作息.md": "七点起床，十一点睡。\n",
            "pyproject.toml": "",
        }
    ).parent


@pytest.fixture(params=["streamed", "one-piece"])
def shape(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("kind", ["deepseek", "kimi", "anthropic"])
async def test_two_turns_with_sequential_and_parallel_calls(
    kind: str, shape: str, write: Write
) -> None:
    script = Script()
    async with simulator(kind, [*script.first, *script.second]) as server:
        blueprint = buddy.load(project(write, kind, server.url))
        model = resolve(blueprint.model, env=KEYS)
        agent = buddy.Agent(blueprint, OnePiece(model) if shape == "one-piece" else model)
        try:
            first = await agent.run("帮我记一下作息")
            second = await agent.run("还有喝水")
        finally:
            await model.aclose()
    assert server.refusals == [], server.refusals
    assert (first.error, first.reply) == (None, "记好了：七点起床，每周跑三次。")
    assert (second.error, second.reply) == (None, "喝水也记下了。")
    assert len(server.requests) == 6
    memory = await agent.conversation.memory.list()
    await agent.close()
    assert {entry["key"] for entry in memory} == {"早起", "跑步", "喝水"}
    if kind == "anthropic":
        _check_anthropic_pass_back(server.requests)
    else:
        _check_reasoning_pass_back(server.requests)


def _check_reasoning_pass_back(requests: list[dict[str, Any]]) -> None:
    # The third request of the first turn carries both earlier steps' reasoning.
    steps = [m for m in requests[2]["messages"] if m.get("tool_calls")]
    assert [m["reasoning_content"] for m in steps] == ["先看看有哪些资料。", "读一下作息表。"]
    # The second turn still carries the first turn's tool-calling steps (DeepSeek's rule).
    later = [m for m in requests[5]["messages"] if m.get("tool_calls")]
    assert [m["reasoning_content"] for m in later] == [
        "先看看有哪些资料。",
        "读一下作息表。",
        "两件事一起记下。",
        "再记一条。",
    ]


def _check_anthropic_pass_back(requests: list[dict[str, Any]]) -> None:
    assert requests[0]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert requests[0]["max_tokens"] == 2048 + 4096
    # Within the turn each step starts with its signed thinking, then redacted thinking,
    # then (text and) tool_use, byte for byte.
    step = requests[3]["messages"][-2]
    assert [b["type"] for b in step["content"]] == [
        "thinking",
        "redacted_thinking",
        "text",
        "tool_use",
        "tool_use",
    ]
    assert step["content"][0] == {
        "type": "thinking",
        "thinking": "两件事一起记下。",
        "signature": signature("两件事一起记下。"),
    }
    # A later turn does not send the earlier turn's thinking again.
    earlier = [m for m in requests[4]["messages"] if m["role"] == "assistant"]
    assert all(
        b["type"] not in ("thinking", "redacted_thinking") for m in earlier for b in m["content"]
    )


@pytest.mark.parametrize("kind", ["deepseek", "kimi", "anthropic"])
async def test_the_simulators_refuse_a_step_without_its_reasoning(kind: str) -> None:
    # The request buddy sent before the fix: the tool-calling step without its reasoning.
    moves = [Move(reasoning="想一想", calls=(("resource_list", {}),))]
    async with simulator(kind, moves) as server, httpx.AsyncClient() as http:
        if kind == "anthropic":
            url, headers = f"{server.url}/v1/messages", {"x-api-key": "k", "anthropic-version": "1"}
            thinking = {"type": "enabled", "budget_tokens": 2048}
            body: dict[str, Any] = {"model": "c", "max_tokens": 8192, "thinking": thinking}
            user = {"role": "user", "content": "你好"}
            first = (
                await http.post(url, headers=headers, json={**body, "messages": [user]})
            ).json()
            (use,) = [b for b in first["content"] if b["type"] == "tool_use"]
            step: dict[str, Any] = {"role": "assistant", "content": [use]}
            result = {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "[]"}],
            }
            messages = [user, step, result]
        else:
            url, headers = f"{server.url}/v1/chat/completions", {"authorization": "Bearer k"}
            body = {"model": "m"}
            user = {"role": "user", "content": "你好"}
            first = (
                await http.post(url, headers=headers, json={**body, "messages": [user]})
            ).json()
            message = first["choices"][0]["message"]
            step = {"role": "assistant", "content": None, "tool_calls": message["tool_calls"]}
            result = {
                "role": "tool",
                "tool_call_id": message["tool_calls"][0]["id"],
                "content": "[]",
            }
            messages = [{"role": "system", "content": "你好"}, user, step, result]
        refused = await http.post(url, headers=headers, json={**body, "messages": messages})
    assert refused.status_code == 400
    expected = {
        "deepseek": "Missing `reasoning_content` field in the assistant message at message index 2",
        "kimi": "reasoning_content is missing in assistant tool call message at index 2",
        "anthropic": "Expected `thinking` or `redacted_thinking`, but found `tool_use`",
    }[kind]
    assert expected in refused.json()["error"]["message"]


def _request(messages: list[Message]) -> ModelRequest:
    return ModelRequest(system="你好", messages=tuple(messages))


async def test_a_signature_changed_by_a_byte_is_refused() -> None:
    moves = [Move(reasoning="想一想", calls=(("resource_list", {}),)), Move(text="好")]
    async with Messages(moves) as server:
        from buddy.models.anthropic import AnthropicModel
        from buddy.models.base import Replay, Thinking

        model = AnthropicModel(
            "claude-sonnet-4-5", base_url=server.url, api_key="k", thinking=Thinking()
        )
        answered = await model.request(_request([Message("user", "你好")]))
        assert answered.replay is not None
        blocks = [dict(b) for b in answered.replay.fields["thinking"]]
        blocks[0]["signature"] = blocks[0]["signature"][:-1] + "0"
        step = Message(
            "assistant",
            "",
            answered.tool_calls,
            replay=Replay(answered.replay.model, {"thinking": blocks}),
        )
        result = Message("tool", "[]", tool_call_id=answered.tool_calls[0].id, name="resource_list")
        with pytest.raises(ModelError, match="Invalid `signature` in `thinking` block"):
            await model.request(_request([Message("user", "你好"), step, result]))
        await model.aclose()


async def test_another_models_step_turns_thinking_off_for_the_request() -> None:
    # A fallback answered the tool-calling step: Claude cannot continue it thinking, and
    # must not see thinking blocks then; it answers without thinking instead of a 400.
    async with Messages([Move(text="好的。")]) as server:
        from buddy.models.anthropic import AnthropicModel
        from buddy.models.base import Replay, Thinking

        model = AnthropicModel(
            "claude-sonnet-4-5", base_url=server.url, api_key="k", thinking=Thinking()
        )
        other = Replay("deepseek:deepseek-reasoner", {"reasoning_content": "想一想"})
        call = ToolCall("call_1", "resource_list", "{}")
        step = Message("assistant", "", (call,), replay=other)
        result = Message("tool", "[]", tool_call_id="call_1", name="resource_list")
        answered = await model.request(_request([Message("user", "你好"), step, result]))
        await model.aclose()
    assert answered.text == "好的。"
    assert server.requests[0]["thinking"] == {"type": "disabled"}
    assert server.refusals == []


async def test_a_turn_that_read_data_passes_back_the_placeholder_later(write: Write) -> None:
    # A stored step whose reasoning was redacted still carries reasoning_content in later
    # turns (DeepSeek refuses it missing): the redaction placeholder, never the text.
    from buddy.runtime.history import records_to_messages

    record = {
        "user_text": "我昨晚睡得怎么样",
        "steps": [
            {"type": "reasoning", "content": "看看睡眠"},
            {"type": "tool_call", "tool": "data_access_query", "call_id": "c1", "content": {}},
            {"type": "tool_result", "tool": "data_access_query", "call_id": "c1", "content": {}},
            {"type": "reasoning", "redacted": True},
            {"type": "tool_call", "tool": "remember", "call_id": "c2", "redacted": True},
            {"type": "tool_result", "tool": "remember", "call_id": "c2", "redacted": True},
            {"type": "reasoning", "redacted": True},
            {"type": "text", "content": "睡得不错。"},
        ],
        "reply": "睡得不错。",
    }
    history = records_to_messages([record], group=False)
    steps = [m for m in history if m.role == "assistant"]
    assert [(m.reasoning, bool(m.tool_calls)) for m in steps] == [
        ("看看睡眠", True),
        (REDACTED, True),
        (REDACTED, False),
    ]
    async with ChatCompletions([Move(text="好")]) as server:
        from buddy.models.openai import OpenAIChatModel

        model = OpenAIChatModel(
            "deepseek-reasoner", provider="deepseek", base_url=f"{server.url}/v1", api_key="k"
        )
        await model.request(_request([*history, Message("user", "谢谢")]))
        await model.aclose()
    assert server.refusals == []
    sent = [m for m in server.requests[0]["messages"] if m.get("tool_calls")]
    assert [m["reasoning_content"] for m in sent] == ["看看睡眠", REDACTED]


async def test_deepseek_buddy_across_turns_through_the_platform(write: Write) -> None:
    # The production path: history rebuilt from the platform's stored turns must still
    # carry the first turn's reasoning when the second turn calls the model.
    script = Script()
    async with (
        ChatCompletions([*script.first, *script.second]) as server,
        LocalPlatform() as platform,
    ):
        blueprint = buddy.load(project(write, "deepseek", server.url))
        model = resolve(blueprint.model, env=KEYS)
        tokens = await platform.register("roundtrip")
        async with running_buddy(platform, blueprint, model, tokens["dev_token"]):
            conversation = await platform.conversation("roundtrip-dev")
            cid = conversation["id"]
            for text in ("帮我记一下作息", "还有喝水"):
                await platform.wait_acked("roundtrip-dev", await platform.say(cid, text))
            transcript = await platform.transcript(cid)
        await model.aclose()
    assert server.refusals == []
    replies = [m["body"].get("text") for m in transcript if m["sender"] == "buddy"]
    assert MODEL_FAILURE not in replies
    assert replies == ["记好了：七点起床，每周跑三次。", "喝水也记下了。"]
    later = [m for m in server.requests[5]["messages"] if m.get("tool_calls")]
    assert [m["reasoning_content"] for m in later][:3] == [
        "先看看有哪些资料。",
        "读一下作息表。",
        "两件事一起记下。",
    ]


async def test_a_turn_after_one_that_ended_on_a_tool_does_not_ask_for_old_thinking() -> None:
    # A question card ends a turn right after its tool step; the next turn's user text
    # joins those tool results on the wire, and Claude would want that step's thinking,
    # which no later turn has. The request goes without thinking instead of a 400.
    async with Messages([Move(reasoning="想", text="好的。")]) as server:
        from buddy.models.anthropic import AnthropicModel
        from buddy.models.base import Thinking

        model = AnthropicModel(
            "claude-sonnet-4-5", base_url=server.url, api_key="k", thinking=Thinking()
        )
        card = ToolCall("toolu_9", "ask_question", "{}")
        history = [
            Message("user", "考考我"),
            Message("assistant", "", (card,), reasoning="出题"),
            Message("tool", "已发出题卡", tool_call_id="toolu_9", name="ask_question"),
            Message("user", "选 A"),
        ]
        answered = await model.request(_request(history))
        await model.aclose()
    assert server.refusals == []
    assert answered.text == "好的。"
    assert server.requests[0]["thinking"] == {"type": "disabled"}
