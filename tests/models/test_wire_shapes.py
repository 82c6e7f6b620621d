"""Stream shapes and per-provider rules of the wire formats, against recorded fixtures:
tool calls streamed without ``index``, CRLF line ends and keep-alive comments, what each
provider's row sends and passes back (reasoning fields, signatures, thinking settings),
and Anthropic's signed thinking blocks."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from buddy.models.anthropic import AnthropicModel
from buddy.models.base import (
    Done,
    Message,
    ModelRequest,
    ReasoningDelta,
    Replay,
    StreamEvent,
    Thinking,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from buddy.models.openai import OpenAIChatModel, thinking_fields
from buddy.models.resilience import RetryingModel
from tests.models.conftest import (
    FakeSleep,
    Wire,
    events_of,
    fixture_json,
    fixture_text,
    reply,
    sse,
)

pytestmark = pytest.mark.anyio

MakeClient = Callable[[Wire], httpx.AsyncClient]


def chat(
    http: httpx.AsyncClient, provider: str, name: str = "m", **options: Any
) -> OpenAIChatModel:
    return OpenAIChatModel(
        name, provider=provider, base_url="http://127.0.0.1:9/v1", api_key="k", http=http, **options
    )


async def done_of(
    model: Any, request: ModelRequest | None = None
) -> tuple[list[StreamEvent], Done]:
    events = [
        e async for e in model.stream(request or ModelRequest("你好", (Message("user", "嗨"),)))
    ]
    last = events[-1]
    assert isinstance(last, Done)
    return events, last


# --- Streamed tool calls ----------------------------------------------------------------


async def test_tool_calls_without_index_start_a_call_per_new_id(client: MakeClient) -> None:
    # Before: both fragments went to call 0 (the position inside each delta), giving one
    # call named `remember` with arguments '{"topic":…}{"file":…}' and losing the second.
    wire = Wire(sse("openai/stream_tool_calls_no_index.sse"))
    events, done = await done_of(chat(client(wire), "dashscope", "qwen3-32b"))
    assert done.response.tool_calls == (
        ToolCall("call_a1", "remember", '{"topic":"早起","text":"七点"}'),
        ToolCall("call_b2", "resource_read", '{"file":"作息.md"}'),
    )
    assert [d.index for d in events_of(ToolCallDelta, events)] == [0, 0, 0, 1, 1]


async def test_an_index_reused_by_a_new_id_starts_a_new_call(client: MakeClient) -> None:
    def chunk(call: dict[str, Any]) -> str:
        return f'data: {{"choices":[{{"index":0,"delta":{{"tool_calls":[{call}]}}}}]}}\n\n'.replace(
            "'", '"'
        )

    body = (
        chunk({"index": 0, "id": "a", "function": {"name": "x", "arguments": "{}"}})
        + chunk({"index": 0, "id": "b", "function": {"name": "y", "arguments": "{"}})
        + chunk({"index": 0, "function": {"arguments": "}"}})
        + "data: [DONE]\n\n"
    )
    response = httpx.Response(
        200, content=body.encode(), headers={"content-type": "text/event-stream"}
    )
    _, done = await done_of(chat(client(Wire(response)), "openai-compatible"))
    assert done.response.tool_calls == (ToolCall("a", "x", "{}"), ToolCall("b", "y", "{}"))


async def test_crlf_keep_alive_and_deepseek_reasoning(client: MakeClient) -> None:
    wire = Wire(sse("openai/stream_deepseek_thinking_crlf.sse"))
    events, done = await done_of(chat(client(wire), "deepseek", "deepseek-reasoner"))
    assert [e.text for e in events_of(ReasoningDelta, events)] == ["用户想记", "作息，先查资料。"]
    response = done.response
    assert response.reasoning == "用户想记作息，先查资料。"
    assert response.tool_calls == (ToolCall("call_00_Ds8k", "resource_list", "{}"),)
    assert response.usage == Usage(311, 42)
    assert response.replay == Replay(
        "deepseek:deepseek-reasoner", {"reasoning_content": "用户想记作息，先查资料。"}
    )


async def test_openrouter_reasoning_details_merge_and_go_back_to_their_model(
    client: MakeClient,
) -> None:
    wire = Wire(sse("openai/stream_openrouter_reasoning_details.sse"), reply("openai/plain.json"))
    model = chat(client(wire), "openrouter", "anthropic/claude-sonnet-4.5")
    _, done = await done_of(model)
    details = [
        {
            "type": "reasoning.text",
            "text": "先查资料。",
            "format": "anthropic-claude-v1",
            "index": 0,
            "signature": "EqQBCkYIBxgCKkBsig==",
        }
    ]
    assert done.response.reasoning == "先查资料。"
    assert done.response.replay == Replay(model.name, {"reasoning_details": details})
    step = Message("assistant", "", done.response.tool_calls, replay=done.response.replay)
    result = Message("tool", "[]", tool_call_id="toolu_or1", name="resource_list")
    await model.request(ModelRequest("你好", (Message("user", "嗨"), step, result)))
    sent = wire.bodies[1]["messages"][2]
    assert sent["reasoning_details"] == details
    assert "reasoning_content" not in sent  # OpenRouter's own rule names only the details


async def test_gemini_signatures_go_back_with_their_calls_only_to_gemini(
    client: MakeClient,
) -> None:
    wire = Wire(
        reply("openai/gemini_signed_tool_calls.json"),
        reply("openai/plain.json"),
        reply("openai/plain.json"),
    )
    http = client(wire)
    gemini = chat(http, "gemini", "gemini-3-pro-preview")
    answered = await gemini.request(ModelRequest("你好", (Message("user", "嗨"),)))
    signed = fixture_json("openai/gemini_signed_tool_calls.json")["choices"][0]["message"]
    step = Message("assistant", "", answered.tool_calls, replay=answered.replay)
    results = tuple(
        Message("tool", "[]", tool_call_id=c.id, name=c.name) for c in answered.tool_calls
    )
    request = ModelRequest("你好", (Message("user", "嗨"), step, *results))
    await gemini.request(request)
    calls = wire.bodies[1]["messages"][2]["tool_calls"]
    assert calls[0]["extra_content"] == signed["tool_calls"][0]["extra_content"]
    assert "extra_content" not in calls[1]  # Gemini signs the first of parallel calls only
    # Another Gemini model (a fallback) must not get this model's signatures.
    await chat(http, "gemini", "gemini-2.5-flash").request(request)
    assert all("extra_content" not in c for c in wire.bodies[2]["messages"][2]["tool_calls"])


async def test_groq_gets_no_reasoning_back(client: MakeClient) -> None:
    # Groq refuses `reasoning_content` on assistant messages; its row passes nothing back.
    wire = Wire(reply("openai/plain.json"))
    step = Message(
        "assistant",
        "",
        (ToolCall("c1", "resource_list", "{}"),),
        reasoning="想",
        replay=Replay("groq:qwen/qwen3-32b", {"reasoning_content": "想"}),
    )
    result = Message("tool", "[]", tool_call_id="c1", name="resource_list")
    await chat(client(wire), "groq", "qwen/qwen3-32b").request(
        ModelRequest("你好", (Message("user", "嗨"), step, result))
    )
    assert set(wire.bodies[0]["messages"][2]) == {"role", "content", "tool_calls"}


async def test_minimax_asks_for_its_reasoning_apart(client: MakeClient) -> None:
    wire = Wire(reply("openai/plain.json"))
    await chat(client(wire), "minimax", "MiniMax-M2").request(
        ModelRequest("你好", (Message("user", "嗨"),))
    )
    assert wire.bodies[0]["reasoning_split"] is True


async def test_mistral_gets_no_stream_options(client: MakeClient) -> None:
    wire = Wire(sse("openai/stream_text.sse"))
    await done_of(chat(client(wire), "mistral", "mistral-small-latest"))
    assert wire.bodies[0]["stream"] is True
    assert "stream_options" not in wire.bodies[0]


async def test_retry_after_ms_on_a_stream(client: MakeClient, sleep: FakeSleep) -> None:
    limited = reply("openai/error_429.json", status=429, headers={"retry-after-ms": "1500"})
    wire = Wire(limited, sse("openai/stream_text.sse"))
    model = RetryingModel(chat(client(wire), "openai", "gpt-4.1-mini"), sleep=sleep)
    await done_of(model)
    assert sleep.delays == [1.5]


# --- Thinking settings, per style ---------------------------------------------------------


@pytest.mark.parametrize(
    ("style", "thinking", "fields"),
    [
        ("type", Thinking(), {"thinking": {"type": "enabled"}}),
        ("type", Thinking(False), {"thinking": {"type": "disabled"}}),
        ("type", Thinking(budget_tokens=900, effort="low"), {"thinking": {"type": "enabled"}}),
        (
            "type_effort",
            Thinking(effort="high"),
            {"thinking": {"type": "enabled"}, "reasoning_effort": "high"},
        ),
        ("type_effort", Thinking(False, effort="high"), {"thinking": {"type": "disabled"}}),
        (
            "enable_thinking",
            Thinking(budget_tokens=500),
            {"enable_thinking": True, "thinking_budget": 500},
        ),
        ("enable_thinking", Thinking(False, budget_tokens=500), {"enable_thinking": False}),
        ("reasoning_effort", Thinking(effort="low"), {"reasoning_effort": "low"}),
        ("reasoning_effort", Thinking(), {}),
        ("reasoning_effort", Thinking(False), {}),
        (
            "openrouter",
            Thinking(effort="medium"),
            {"reasoning": {"enabled": True, "effort": "medium"}},
        ),
        (
            "openrouter",
            Thinking(budget_tokens=2000),
            {"reasoning": {"enabled": True, "max_tokens": 2000}},
        ),
        ("openrouter", Thinking(False), {"reasoning": {"enabled": False}}),
        ("", Thinking(), {}),
    ],
)
def test_thinking_fields(style: str, thinking: Thinking, fields: dict[str, Any]) -> None:
    assert thinking_fields(style, thinking) == fields


async def test_no_thinking_sends_no_thinking_field(client: MakeClient) -> None:
    wire = Wire(reply("openai/plain.json"))
    await chat(client(wire), "deepseek").request(ModelRequest("你好", (Message("user", "嗨"),)))
    assert "thinking" not in wire.bodies[0]


async def test_the_request_thinking_wins_over_the_model_default(client: MakeClient) -> None:
    wire = Wire(reply("openai/plain.json"))
    model = chat(client(wire), "zhipu", "glm-4.6", thinking=Thinking())
    await model.request(ModelRequest("你好", (Message("user", "嗨"),), thinking=Thinking(False)))
    assert wire.bodies[0]["thinking"] == {"type": "disabled"}


# --- Anthropic ----------------------------------------------------------------------------


def claude(
    http: httpx.AsyncClient, name: str = "claude-sonnet-4-5", **options: Any
) -> AnthropicModel:
    return AnthropicModel(name, base_url="http://127.0.0.1:9", api_key="k", http=http, **options)


async def test_streamed_thinking_keeps_signatures_and_redacted_blocks(client: MakeClient) -> None:
    # Before: signature_delta was dropped and redacted_thinking ignored, so nothing could
    # be passed back and a thinking buddy's second step was refused.
    wire = Wire(sse("anthropic/stream_thinking_tool_use.sse"))
    _, done = await done_of(claude(client(wire), thinking=Thinking()))
    response = done.response
    assert response.reasoning == "This is a straightforward question about"
    assert response.tool_calls == (
        ToolCall(
            "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather", '{"location": "San Francisco, CA"}'
        ),
    )
    assert response.usage == Usage(43, 80)  # message_delta's input count of 0 is no count
    assert response.replay is not None
    thinking, redacted = response.replay.fields["thinking"]
    assert thinking["type"] == "thinking"
    assert thinking["thinking"] == "This is a straightforward question about"
    recorded = re.search(
        r'"signature":"([^"]+)"', fixture_text("anthropic/stream_thinking_tool_use.sse")
    )
    assert recorded is not None and thinking["signature"] == recorded.group(1)  # byte for byte
    assert redacted == {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFrD5Ab3"}


async def test_thinking_blocks_go_back_first_and_only_to_their_model(client: MakeClient) -> None:
    blocks = [
        {"type": "thinking", "thinking": "想一想", "signature": "sig=="},
        {"type": "redacted_thinking", "data": "opaque"},
    ]
    step = Message(
        "assistant",
        "我看看。",
        (ToolCall("toolu_1", "resource_list", "{}"),),
        replay=Replay("anthropic:claude-sonnet-4-5", {"thinking": blocks}),
    )
    result = Message("tool", "[]", tool_call_id="toolu_1", name="resource_list")
    request = ModelRequest("你好", (Message("user", "嗨"), step, result))
    wire = Wire(reply("anthropic/plain.json"), reply("anthropic/plain.json"))
    http = client(wire)
    await claude(http, thinking=Thinking()).request(request)
    content = wire.bodies[0]["messages"][1]["content"]
    assert [b["type"] for b in content] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert content[:2] == blocks
    # Claude Opus, thinking: these blocks are not its own, so it continues without thinking.
    await claude(http, "claude-opus-4-5", thinking=Thinking()).request(request)
    assert wire.bodies[1]["thinking"] == {"type": "disabled"}
    assert [b["type"] for b in wire.bodies[1]["messages"][1]["content"]] == ["text", "tool_use"]


@pytest.mark.parametrize(
    ("name", "thinking", "expected", "extra"),
    [
        ("claude-sonnet-4-5", Thinking(), {"type": "enabled", "budget_tokens": 10000}, {}),
        (
            "claude-sonnet-4-5",
            Thinking(effort="low"),
            {"type": "enabled", "budget_tokens": 2048},
            {},
        ),
        (
            "claude-sonnet-4-5",
            Thinking(budget_tokens=3000),
            {"type": "enabled", "budget_tokens": 3000},
            {},
        ),
        ("claude-sonnet-4-5", Thinking(False), {"type": "disabled"}, {}),
        ("claude-opus-4-6", Thinking(), {"type": "adaptive"}, {}),
        # a dated Claude 4 name is not 4.6: it takes a budget
        ("claude-opus-4-20250514", Thinking(), {"type": "enabled", "budget_tokens": 10000}, {}),
        (
            "claude-sonnet-4-6",
            Thinking(effort="high"),
            {"type": "adaptive"},
            {"output_config": {"effort": "high"}},
        ),
        (
            "claude-opus-4-7",
            Thinking(budget_tokens=3000),
            {"type": "enabled", "budget_tokens": 3000},
            {},
        ),
    ],
)
async def test_anthropic_thinking_settings(
    client: MakeClient,
    name: str,
    thinking: Thinking,
    expected: dict[str, Any],
    extra: dict[str, Any],
) -> None:
    wire = Wire(reply("anthropic/plain.json"))
    await claude(client(wire), name, thinking=thinking, temperature=0.7).request(
        ModelRequest("你好", (Message("user", "嗨"),))
    )
    body = wire.bodies[0]
    assert body["thinking"] == expected
    for key, value in extra.items():
        assert body[key] == value
    budget = expected.get("budget_tokens", 0)
    assert body["max_tokens"] == 4096 + budget
    # With thinking on the API refuses temperature; off, it is sent.
    assert ("temperature" in body) == (expected["type"] == "disabled")
