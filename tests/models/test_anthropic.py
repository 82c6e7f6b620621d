"""The Anthropic Messages provider, against wire fixtures and a fake provider on a real
socket."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from buddy.errors import ModelConfigError, ModelError
from buddy.models.anthropic import DEFAULT_MAX_TOKENS, AnthropicModel
from buddy.models.base import (
    Done,
    Message,
    ModelRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from tests.models.conftest import (
    REQUEST,
    BrokenStream,
    FakeProvider,
    Scripted,
    Wire,
    events_of,
    fixture_text,
    pieces,
    reply,
    sse,
)

pytestmark = pytest.mark.anyio

MakeClient = Callable[[Wire], httpx.AsyncClient]
BASE = "https://api.anthropic.com"


def claude(http: httpx.AsyncClient, **options: object) -> AnthropicModel:
    return AnthropicModel(
        "claude-sonnet-4-5",
        base_url=BASE,
        api_key="sk-ant-test",
        api_key_env="ANTHROPIC_API_KEY",
        http=http,
        **options,  # type: ignore[arg-type]
    )


async def collect(model: AnthropicModel, request: ModelRequest = REQUEST) -> list[StreamEvent]:
    return [event async for event in model.stream(request)]


# --- Requests ----------------------------------------------------------------------------


async def test_request_body_and_headers(client: MakeClient) -> None:
    wire = Wire(reply("anthropic/plain.json"))
    await claude(client(wire)).request(REQUEST)

    sent = wire.requests[0]
    assert str(sent.url) == f"{BASE}/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    body = wire.bodies[0]
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS == 4096
    assert body["system"] == "你是小图，一个温和的陪伴者。"
    assert "temperature" not in body
    assert "stream" not in body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "记住我的生日是3月5日"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "memory_write",
                    "input": {"key": "生日", "value": "3月5日"},
                }
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "已记住。"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "记住啦！"}]},
        {"role": "user", "content": [{"type": "text", "text": "你好"}]},
    ]
    assert body["tools"] == [
        {
            "name": "memory_write",
            "description": "Remember something about the user.",
            "input_schema": REQUEST.tools[0].parameters,
        }
    ]


async def test_tool_results_of_one_step_share_one_user_message(client: MakeClient) -> None:
    calls = (ToolCall("t1", "a", "{}"), ToolCall("t2", "b", "not json"))
    request = ModelRequest(
        system="",
        messages=(
            Message("user", "hi"),
            Message("assistant", "let me look", tool_calls=calls),
            Message("tool", "one", tool_call_id="t1", name="a"),
            Message("tool", "bad arguments", tool_call_id="t2", name="b", is_error=True),
            Message("user", "and also"),
        ),
        temperature=0.5,
        top_p=0.8,
        max_tokens=256,
    )
    wire = Wire(reply("anthropic/plain.json"))
    await claude(client(wire)).request(request)
    body = wire.bodies[0]
    assert "system" not in body
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.5, 0.8, 256)
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "let me look"},
        {"type": "tool_use", "id": "t1", "name": "a", "input": {}},
        {"type": "tool_use", "id": "t2", "name": "b", "input": {"invalid_json": "not json"}},
    ]
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
            {
                "type": "tool_result",
                "tool_use_id": "t2",
                "content": "bad arguments",
                "is_error": True,
            },
            {"type": "text", "text": "and also"},
        ],
    }
    assert len(body["messages"]) == 3


async def test_model_defaults_and_v1_base_url(client: MakeClient) -> None:
    wire = Wire(reply("anthropic/plain.json"))
    model = AnthropicModel(
        "claude-haiku-4-5",
        base_url="http://127.0.0.1:9000/v1/",
        http=client(wire),
        max_tokens=1000,
        temperature=0.2,
    )
    await model.request(REQUEST)
    assert str(wire.requests[0].url) == "http://127.0.0.1:9000/v1/messages"
    assert "x-api-key" not in wire.requests[0].headers
    assert (wire.bodies[0]["max_tokens"], wire.bodies[0]["temperature"]) == (1000, 0.2)


# --- Answers in one piece -----------------------------------------------------------------


async def test_plain_reply(client: MakeClient) -> None:
    response = await claude(client(Wire(reply("anthropic/plain.json")))).request(REQUEST)
    assert response.text == "你好！今天过得怎么样？"
    assert response.finish_reason == "stop"
    assert response.usage == Usage(28, 14)
    assert response.model == "anthropic:claude-sonnet-4-5"


async def test_tool_use(client: MakeClient) -> None:
    response = await claude(client(Wire(reply("anthropic/tool_use.json")))).request(REQUEST)
    assert response.text == "我记一下。"
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == (
        ToolCall(
            "toolu_01A09q90qw90lq917835lq9", "memory_write", '{"key": "生日", "value": "3月5日"}'
        ),
        ToolCall("toolu_01B7rLm2kq3Xw4Zp9aT0sVn", "resource_list", "{}"),
    )
    assert response.usage == Usage(490, 71)  # cached input counts as input


async def test_thinking(client: MakeClient) -> None:
    response = await claude(client(Wire(reply("anthropic/thinking.json")))).request(REQUEST)
    assert response.reasoning == "比较小数：9.8 更大。"
    assert response.text == "9.11 比 9.8 小。"


# --- Failures -----------------------------------------------------------------------------


async def test_429_carries_retry_after(client: MakeClient) -> None:
    wire = Wire(reply("anthropic/error_429.json", status=429, headers={"retry-after": "12"}))
    with pytest.raises(ModelError) as caught:
        await claude(client(wire)).request(REQUEST)
    assert (caught.value.status, caught.value.retryable, caught.value.retry_after) == (
        429,
        True,
        12.0,
    )
    assert "per-minute rate limit" in str(caught.value)


@pytest.mark.parametrize(
    ("fixture", "status", "retryable"),
    [("error_500.json", 500, True), ("error_529.json", 529, True), ("error_500.json", 400, False)],
)
async def test_status_retryable(
    client: MakeClient, fixture: str, status: int, retryable: bool
) -> None:
    wire = Wire(reply(f"anthropic/{fixture}", status=status))
    with pytest.raises(ModelError) as caught:
        await claude(client(wire)).request(REQUEST)
    assert (caught.value.status, caught.value.retryable) == (status, retryable)


async def test_refused_key(client: MakeClient) -> None:
    body = {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }
    with pytest.raises(ModelConfigError, match="check the key in ANTHROPIC_API_KEY"):
        await claude(client(Wire(httpx.Response(401, json=body)))).request(REQUEST)


async def test_timeout(client: MakeClient) -> None:
    with pytest.raises(ModelError, match=r"timed out \(ConnectTimeout\)") as caught:
        await claude(client(Wire(httpx.ConnectTimeout("connect timed out")))).request(REQUEST)
    assert caught.value.retryable


async def test_malformed_json(client: MakeClient) -> None:
    wire = Wire(httpx.Response(200, content=b"<html>502 Bad Gateway</html>"))
    with pytest.raises(ModelError, match="malformed JSON") as caught:
        await claude(client(wire)).request(REQUEST)
    assert caught.value.retryable


async def test_unexpected_shape(client: MakeClient) -> None:
    wire = Wire(httpx.Response(200, json={"type": "message"}))
    with pytest.raises(ModelError, match="no content list"):
        await claude(client(wire)).request(REQUEST)


# --- Streams ------------------------------------------------------------------------------


async def test_stream_text(client: MakeClient) -> None:
    wire = Wire(sse("anthropic/stream_text.sse"))
    events = await collect(claude(client(wire)))
    assert wire.bodies[0]["stream"] is True
    assert [e.text for e in events_of(TextDelta, events)] == ["你好", "！今天过得怎么样？"]
    done = events[-1]
    assert isinstance(done, Done)
    assert done.response.text == "你好！今天过得怎么样？"
    assert done.response.usage == Usage(28, 14)
    assert done.response.finish_reason == "stop"


async def test_stream_tool_use_with_input_json_delta(client: MakeClient) -> None:
    events = await collect(claude(client(Wire(sse("anthropic/stream_tool_use.sse")))))
    deltas = events_of(ToolCallDelta, events)
    # Indexes count tool calls, not content blocks (the text block is block 0).
    assert deltas[0] == ToolCallDelta(0, "toolu_01A09q90qw90lq917835lq9", "memory_write", "")
    assert (
        "".join(d.arguments for d in deltas if d.index == 0) == '{"key": "生日", "value": "3月5日"}'
    )
    assert [d.arguments for d in deltas if d.index == 0][2] == '{"ke'
    assert deltas[-2] == ToolCallDelta(1, "toolu_01B7rLm2kq3Xw4Zp9aT0sVn", "resource_list", "")
    done = events[-1]
    assert isinstance(done, Done)
    assert done.response.text == "我记一下。"
    assert done.response.tool_calls == (
        ToolCall(
            "toolu_01A09q90qw90lq917835lq9", "memory_write", '{"key": "生日", "value": "3月5日"}'
        ),
        ToolCall("toolu_01B7rLm2kq3Xw4Zp9aT0sVn", "resource_list", "{}"),
    )
    assert done.response.finish_reason == "tool_calls"
    assert done.response.usage == Usage(390, 89)


async def test_stream_thinking(client: MakeClient) -> None:
    events = await collect(claude(client(Wire(sse("anthropic/stream_thinking.sse")))))
    assert [e.text for e in events_of(ReasoningDelta, events)] == ["比较小数：", "9.8 更大。"]
    done = events[-1]
    assert isinstance(done, Done)
    assert done.response.reasoning == "比较小数：9.8 更大。"
    assert done.response.text == "9.11 比 9.8 小。"


async def test_stream_error_event(client: MakeClient) -> None:
    with pytest.raises(ModelError, match="overloaded_error: Overloaded") as caught:
        await collect(claude(client(Wire(sse("anthropic/stream_error.sse")))))
    assert caught.value.retryable


async def test_stream_error_status(client: MakeClient) -> None:
    wire = Wire(reply("anthropic/error_529.json", status=529))
    with pytest.raises(ModelError, match="HTTP 529: Overloaded") as caught:
        await collect(claude(client(wire)))
    assert caught.value.retryable


async def test_stream_without_message_stop_is_cut(client: MakeClient) -> None:
    text = fixture_text("anthropic/stream_text.sse").split("event: message_stop")[0]
    with pytest.raises(ModelError, match="ended before message_stop") as caught:
        await collect(claude(client(Wire(httpx.Response(200, content=text.encode())))))
    assert caught.value.retryable


async def test_stream_connection_reset(client: MakeClient) -> None:
    head = fixture_text("anthropic/stream_tool_use.sse")[:900].encode()
    wire = Wire(httpx.Response(200, stream=BrokenStream(head)))
    with pytest.raises(ModelError, match="could not talk") as caught:
        await collect(claude(client(wire)))
    assert caught.value.retryable


async def test_stream_malformed_json(client: MakeClient) -> None:
    text = 'event: message_start\ndata: {"type":"message_start","message":{\n\n'
    with pytest.raises(ModelError, match="malformed JSON in the stream"):
        await collect(claude(client(Wire(httpx.Response(200, content=text.encode())))))


async def test_stream_input_json_delta_for_unknown_block(client: MakeClient) -> None:
    text = (
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":3,'
        '"delta":{"type":"input_json_delta","partial_json":"{}"}}\n\n'
    )
    with pytest.raises(ModelError, match="not a tool_use"):
        await collect(claude(client(Wire(httpx.Response(200, content=text.encode())))))


# --- A real socket ------------------------------------------------------------------------


async def test_socket_stream(provider: FakeProvider) -> None:
    provider.answer(Scripted(pieces(fixture_text("anthropic/stream_tool_use.sse"), 53)))
    async with httpx.AsyncClient() as http:
        model = AnthropicModel("claude-sonnet-4-5", base_url=provider.url, api_key="k", http=http)
        events = await collect(model)
    done = events[-1]
    assert isinstance(done, Done)
    assert done.response.tool_calls[0].arguments == '{"key": "生日", "value": "3月5日"}'
    assert provider.received[0].path == "/v1/messages"
    assert provider.received[0].headers["x-api-key"] == "k"


async def test_socket_stream_cut_midway(provider: FakeProvider) -> None:
    text = fixture_text("anthropic/stream_tool_use.sse")
    provider.answer(Scripted(pieces(text[: len(text) // 2], 80), end="cut"))
    started = time.monotonic()
    async with httpx.AsyncClient() as http:
        model = AnthropicModel("claude-sonnet-4-5", base_url=provider.url, http=http)
        with pytest.raises(ModelError, match="before the response was complete") as caught:
            await collect(model)
    assert caught.value.retryable
    assert time.monotonic() - started < 2


async def test_socket_stream_stall_times_out(provider: FakeProvider) -> None:
    text = fixture_text("anthropic/stream_text.sse")
    provider.answer(Scripted(pieces(text[:500], 500), end="stall"))
    started = time.monotonic()
    async with httpx.AsyncClient() as http:
        model = AnthropicModel("claude-sonnet-4-5", base_url=provider.url, http=http, timeout=0.3)
        with pytest.raises(ModelError, match="timed out"):
            await collect(model)
    assert time.monotonic() - started < 2
