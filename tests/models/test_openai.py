"""The OpenAI-compatible chat-completions provider, against wire fixtures and a fake
provider on a real socket."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from buddy.errors import ModelConfigError, ModelError
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
from buddy.models.openai import OpenAIChatModel
from tests.models.conftest import (
    REQUEST,
    BrokenStream,
    FakeProvider,
    Scripted,
    Wire,
    drain,
    events_of,
    fixture_text,
    pieces,
    reply,
    sse,
)

pytestmark = pytest.mark.anyio

MakeClient = Callable[[Wire], httpx.AsyncClient]
BASE = "https://api.moonshot.cn/v1"


def kimi(http: httpx.AsyncClient, **options: object) -> OpenAIChatModel:
    return OpenAIChatModel(
        "kimi-k3",
        provider="moonshot",
        base_url=BASE,
        api_key="sk-test",
        api_key_env="MOONSHOT_API_KEY",
        http=http,
        **options,  # type: ignore[arg-type]
    )


async def collect(model: OpenAIChatModel, request: ModelRequest = REQUEST) -> list[StreamEvent]:
    return [event async for event in model.stream(request)]


# --- Requests ----------------------------------------------------------------------------


async def test_request_body_and_headers(client: MakeClient) -> None:
    wire = Wire(reply("openai/plain.json"))
    await kimi(client(wire), temperature=0.3).request(REQUEST)

    sent = wire.requests[0]
    assert sent.method == "POST"
    assert str(sent.url) == f"{BASE}/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["content-type"] == "application/json"
    body = wire.bodies[0]
    assert body["model"] == "kimi-k3"
    assert body["temperature"] == 0.3
    assert "max_tokens" not in body
    assert "top_p" not in body
    assert "stream" not in body
    assert body["messages"] == [
        {"role": "system", "content": "你是小图，一个温和的陪伴者。"},
        {"role": "user", "content": "记住我的生日是3月5日"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "memory_write",
                        "arguments": '{"key":"生日","value":"3月5日"}',
                    },
                }
            ],
            # Kimi wants reasoning back with every tool-calling step; none was kept.
            "reasoning_content": " ",
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "已记住。"},
        {"role": "assistant", "content": "记住啦！"},
        {"role": "user", "content": "你好"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "memory_write",
                "description": "Remember something about the user.",
                "parameters": REQUEST.tools[0].parameters,
            },
        }
    ]


async def test_request_settings_override_the_model_defaults(client: MakeClient) -> None:
    wire = Wire(reply("openai/plain.json"))
    model = kimi(client(wire), temperature=0.3, max_tokens=100, top_p=0.9)
    request = ModelRequest(
        system="", messages=(Message("user", "hi"),), temperature=1.0, max_tokens=50
    )
    await model.request(request)

    body = wire.bodies[0]
    assert body["messages"] == [{"role": "user", "content": "hi"}]  # no empty system message
    assert (body["temperature"], body["max_tokens"], body["top_p"]) == (1.0, 50, 0.9)
    assert "tools" not in body


async def test_max_tokens_field_for_openai_itself(client: MakeClient) -> None:
    wire = Wire(reply("openai/plain.json"))
    model = OpenAIChatModel(
        "gpt-5-mini",
        base_url="https://api.openai.com/v1",
        api_key="k",
        http=client(wire),
        max_tokens=64,
        max_tokens_field="max_completion_tokens",
    )
    await model.request(REQUEST)
    assert wire.bodies[0]["max_completion_tokens"] == 64
    assert "max_tokens" not in wire.bodies[0]


async def test_no_key_sends_no_authorization(client: MakeClient) -> None:
    wire = Wire(reply("openai/plain.json"))
    model = OpenAIChatModel(
        "qwen3:8b", provider="ollama", base_url="http://127.0.0.1:11434/v1/", http=client(wire)
    )
    await model.request(REQUEST)
    assert "authorization" not in wire.requests[0].headers
    assert str(wire.requests[0].url) == "http://127.0.0.1:11434/v1/chat/completions"


# --- Answers in one piece -----------------------------------------------------------------


async def test_plain_reply(client: MakeClient) -> None:
    response = await kimi(client(Wire(reply("openai/plain.json")))).request(REQUEST)
    assert response.text == "你好！今天过得怎么样？"
    assert response.tool_calls == ()
    assert response.finish_reason == "stop"
    assert response.usage == Usage(31, 9)
    assert response.model == "moonshot:kimi-k3"


async def test_tool_calls(client: MakeClient) -> None:
    response = await kimi(client(Wire(reply("openai/tool_calls.json")))).request(REQUEST)
    assert response.text == ""
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == (
        ToolCall("call_Qm2sX8ka3L1", "memory_write", '{"key":"生日","value":"3月5日"}'),
        ToolCall("call_Zr7pW0cd9N4", "resource_list", "{}"),
    )
    assert response.usage.total_tokens == 450


async def test_reasoning_content(client: MakeClient) -> None:
    response = await kimi(client(Wire(reply("openai/reasoning.json")))).request(REQUEST)
    assert response.text == "9.11 比 9.8 小。"
    assert response.reasoning.startswith("比较小数")


async def test_tool_call_without_id_gets_one(client: MakeClient) -> None:
    body = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [{"function": {"name": "resource_list", "arguments": {"a": 1}}}],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    response = await kimi(client(Wire(httpx.Response(200, json=body)))).request(REQUEST)
    (call,) = response.tool_calls
    assert call.id.startswith("call_")
    assert call.arguments == '{"a": 1}'


# --- Failures -----------------------------------------------------------------------------


async def test_429_carries_retry_after(client: MakeClient) -> None:
    wire = Wire(reply("openai/error_429.json", status=429, headers={"retry-after": "7"}))
    with pytest.raises(ModelError) as caught:
        await kimi(client(wire)).request(REQUEST)
    error = caught.value
    assert (error.status, error.retryable, error.retry_after) == (429, True, 7.0)
    assert "Rate limit reached" in str(error)
    assert str(error).startswith("moonshot:kimi-k3: HTTP 429")


async def test_retry_after_ms_wins(client: MakeClient) -> None:
    headers = {"retry-after": "7", "retry-after-ms": "1500"}
    wire = Wire(reply("openai/error_429.json", status=429, headers=headers))
    with pytest.raises(ModelError) as caught:
        await kimi(client(wire)).request(REQUEST)
    assert caught.value.retry_after == 1.5


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(500, True), (502, True), (503, True), (408, True), (400, False), (422, False)],
)
async def test_status_retryable(client: MakeClient, status: int, retryable: bool) -> None:
    wire = Wire(reply("openai/error_500.json", status=status))
    with pytest.raises(ModelError) as caught:
        await kimi(client(wire)).request(REQUEST)
    assert type(caught.value) is ModelError
    assert (caught.value.status, caught.value.retryable) == (status, retryable)


async def test_refused_key_is_a_config_error_naming_the_variable(client: MakeClient) -> None:
    body = {"error": {"message": "Invalid Authentication", "type": "invalid_authentication_error"}}
    wire = Wire(httpx.Response(401, json=body))
    with pytest.raises(ModelConfigError, match="MOONSHOT_API_KEY") as caught:
        await kimi(client(wire)).request(REQUEST)
    assert caught.value.status == 401
    assert "Invalid Authentication" in str(caught.value)


async def test_timeout(client: MakeClient) -> None:
    wire = Wire(httpx.ReadTimeout("read timed out"))
    with pytest.raises(ModelError, match="timed out") as caught:
        await kimi(client(wire)).request(REQUEST)
    assert caught.value.retryable
    assert caught.value.status == 0


async def test_connection_error(client: MakeClient) -> None:
    wire = Wire(httpx.ConnectError("connection refused"))
    with pytest.raises(ModelError, match="could not talk to the provider") as caught:
        await kimi(client(wire)).request(REQUEST)
    assert caught.value.retryable


async def test_malformed_json(client: MakeClient) -> None:
    broken = fixture_text("openai/plain.json")[:-40]
    wire = Wire(httpx.Response(200, content=broken.encode()))
    with pytest.raises(ModelError, match="malformed JSON") as caught:
        await kimi(client(wire)).request(REQUEST)
    assert caught.value.retryable
    assert "你好" not in str(caught.value)  # where it broke, never what the reply said


@pytest.mark.parametrize("body", [[], {"choices": []}, {"choices": [{"finish_reason": "stop"}]}])
async def test_unexpected_shape(client: MakeClient, body: object) -> None:
    wire = Wire(httpx.Response(200, json=body))
    with pytest.raises(ModelError, match="unexpected response shape"):
        await kimi(client(wire)).request(REQUEST)


async def test_error_object_with_status_200(client: MakeClient) -> None:
    wire = Wire(httpx.Response(200, json={"error": {"message": "upstream overloaded"}}))
    with pytest.raises(ModelError, match="upstream overloaded") as caught:
        await kimi(client(wire)).request(REQUEST)
    assert caught.value.retryable


# --- Streams ------------------------------------------------------------------------------


async def test_stream_body(client: MakeClient) -> None:
    wire = Wire(sse("openai/stream_text.sse"))
    await collect(kimi(client(wire)))
    body = wire.bodies[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert wire.requests[0].headers["accept"] == "text/event-stream"


async def test_stream_text(client: MakeClient) -> None:
    events = await collect(kimi(client(Wire(sse("openai/stream_text.sse")))))
    assert [e.text for e in events_of(TextDelta, events)] == ["你好", "！今天", "过得怎么样？"]
    done = events[-1]
    assert isinstance(done, Done)
    assert done.response.text == "你好！今天过得怎么样？"
    assert done.response.usage == Usage(31, 9)  # from the last chunk, which has no choices
    assert done.response.finish_reason == "stop"
    assert done.response.model == "moonshot:kimi-k3"


async def test_stream_tool_call_arguments_in_fragments(client: MakeClient) -> None:
    events = await collect(kimi(client(Wire(sse("openai/stream_tool_calls.sse")))))
    deltas = events_of(ToolCallDelta, events)
    assert deltas[0] == ToolCallDelta(0, "call_Qm2sX8ka3L1", "memory_write", "")
    assert [d.arguments for d in deltas if d.index == 0] == [
        "",
        '{"ke',
        'y":"生日","val',
        'ue":"3月5日"}',
    ]
    assert deltas[-1] == ToolCallDelta(1, None, None, "{}")
    done = events[-1]
    assert isinstance(done, Done)
    assert done.response.text == "我记一下。"
    assert done.response.tool_calls == (
        ToolCall("call_Qm2sX8ka3L1", "memory_write", '{"key":"生日","value":"3月5日"}'),
        ToolCall("call_Zr7pW0cd9N4", "resource_list", "{}"),
    )
    assert done.response.finish_reason == "tool_calls"
    assert done.response.usage == Usage(412, 45)


async def test_stream_reasoning_content(client: MakeClient) -> None:
    events = await collect(kimi(client(Wire(sse("openai/stream_reasoning.sse")))))
    assert [e.text for e in events_of(ReasoningDelta, events)] == ["比较小数：", "9.8 更大。"]
    assert [e.text for e in events_of(TextDelta, events)] == ["9.11 比 9.8 小。"]
    done = events[-1]
    assert isinstance(done, Done)
    assert done.response.reasoning == "比较小数：9.8 更大。"
    assert done.response.usage == Usage(18, 64)  # on the finishing chunk, DeepSeek-style


async def test_stream_error_status(client: MakeClient) -> None:
    wire = Wire(reply("openai/error_429.json", status=429, headers={"retry-after": "3"}))
    with pytest.raises(ModelError) as caught:
        await collect(kimi(client(wire)))
    assert (caught.value.status, caught.value.retry_after) == (429, 3.0)
    assert "Rate limit reached" in str(caught.value)


async def test_stream_without_done_is_cut(client: MakeClient) -> None:
    text = fixture_text("openai/stream_text.sse").replace("data: [DONE]\n", "")
    wire = Wire(httpx.Response(200, content=text.encode()))
    events: list[StreamEvent] = []
    with pytest.raises(ModelError, match=r"ended before data: \[DONE\]") as caught:
        await drain(kimi(client(wire)).stream(REQUEST), events)
    assert caught.value.retryable
    assert not events_of(Done, events)


async def test_stream_connection_reset(client: MakeClient) -> None:
    head = fixture_text("openai/stream_text.sse")[:400].encode()
    wire = Wire(httpx.Response(200, stream=BrokenStream(head)))
    with pytest.raises(ModelError, match="could not talk") as caught:
        await collect(kimi(client(wire)))
    assert caught.value.retryable


async def test_stream_malformed_json(client: MakeClient) -> None:
    text = 'data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: {"choices":[{"del\n\ndata: [DONE]\n\n'
    wire = Wire(httpx.Response(200, content=text.encode()))
    with pytest.raises(ModelError, match="malformed JSON in the stream") as caught:
        await collect(kimi(client(wire)))
    assert caught.value.retryable


async def test_stream_error_chunk(client: MakeClient) -> None:
    text = 'data: {"error":{"message":"internal error","type":"server_error"}}\n\n'
    wire = Wire(httpx.Response(200, content=text.encode()))
    with pytest.raises(ModelError, match="internal error"):
        await collect(kimi(client(wire)))


async def test_default_client_is_closed(client: MakeClient) -> None:
    model = OpenAIChatModel("m", base_url=BASE)
    assert model._http is None
    await model.aclose()  # nothing opened, nothing to close
    model._client()
    await model.aclose()
    assert model._http is None


# --- A real socket ------------------------------------------------------------------------


async def test_socket_stream_split_across_tcp_chunks(provider: FakeProvider) -> None:
    provider.answer(Scripted(pieces(fixture_text("openai/stream_tool_calls.sse"), 37)))
    async with httpx.AsyncClient() as http:
        model = OpenAIChatModel(
            "gpt-4.1-mini", base_url=provider.url + "/v1", api_key="k", http=http
        )
        events = [event async for event in model.stream(REQUEST)]
    done = events[-1]
    assert isinstance(done, Done)
    assert done.response.tool_calls[0].arguments == '{"key":"生日","value":"3月5日"}'
    assert provider.received[0].path == "/v1/chat/completions"
    assert provider.received[0].headers["authorization"] == "Bearer k"
    assert provider.received[0].body["stream"] is True


async def test_socket_stream_cut_midway(provider: FakeProvider) -> None:
    text = fixture_text("openai/stream_tool_calls.sse")
    provider.answer(Scripted(pieces(text[: len(text) // 2], 64), end="cut"))
    started = time.monotonic()
    received: list[StreamEvent] = []
    async with httpx.AsyncClient() as http:
        model = OpenAIChatModel("gpt-4.1-mini", base_url=provider.url + "/v1", http=http)
        with pytest.raises(ModelError) as caught:
            await drain(model.stream(REQUEST), received)
    assert caught.value.retryable
    assert "before the response was complete" in str(caught.value)
    assert events_of(TextDelta, received)  # some of it arrived before the cut
    assert time.monotonic() - started < 2


async def test_socket_stream_ends_cleanly_without_done(provider: FakeProvider) -> None:
    text = fixture_text("openai/stream_text.sse").replace("data: [DONE]\n", "")
    provider.answer(Scripted(pieces(text, 100)))
    async with httpx.AsyncClient() as http:
        model = OpenAIChatModel("kimi-k3", base_url=provider.url, http=http)
        with pytest.raises(ModelError, match="ended before"):
            await collect(model)


async def test_socket_stream_stall_times_out(provider: FakeProvider) -> None:
    text = fixture_text("openai/stream_text.sse")
    provider.answer(Scripted(pieces(text[:300], 300), end="stall"))
    started = time.monotonic()
    async with httpx.AsyncClient() as http:
        model = OpenAIChatModel("kimi-k3", base_url=provider.url, http=http, timeout=0.3)
        with pytest.raises(ModelError, match="timed out") as caught:
            await collect(model)
    assert caught.value.retryable
    assert time.monotonic() - started < 2
