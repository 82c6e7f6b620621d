"""Retries, timeouts and fallbacks, over both wire formats."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Callable

import httpx
import pytest

from buddy.errors import ModelConfigError, ModelError
from buddy.models.anthropic import AnthropicModel
from buddy.models.base import (
    Done,
    Model,
    ModelRequest,
    ModelResponse,
    StreamEvent,
    StreamRestart,
    TextDelta,
)
from buddy.models.openai import OpenAIChatModel
from buddy.models.resilience import FallbackModel, RetryingModel, parse_retry_after
from tests.models.conftest import (
    REQUEST,
    BrokenStream,
    FakeSleep,
    StallingStream,
    Wire,
    drain,
    events_of,
    fixture_text,
    reply,
    sse,
)

pytestmark = pytest.mark.anyio

MakeClient = Callable[[Wire], httpx.AsyncClient]


def kimi(http: httpx.AsyncClient) -> Model:
    return OpenAIChatModel(
        "kimi-k3",
        provider="moonshot",
        base_url="https://api.moonshot.cn/v1",
        api_key="k",
        http=http,
    )


def claude(http: httpx.AsyncClient) -> Model:
    return AnthropicModel("claude-sonnet-4-5", api_key="k", http=http)


FORMATS = {"openai": kimi, "anthropic": claude}
both = pytest.mark.parametrize("api", ["openai", "anthropic"])


def build(api: str, http: httpx.AsyncClient) -> Model:
    return FORMATS[api](http)


async def collect(model: Model, request: ModelRequest = REQUEST) -> list[StreamEvent]:
    return [event async for event in model.stream(request)]


def hang() -> Callable[[httpx.Request], object]:
    async def forever(request: httpx.Request) -> httpx.Response:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return forever


# --- Retry-After ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7", 7.0),
        (" 1.5 ", 1.5),
        ("0", 0.0),
        ("-5", 0.0),
        ("soon", None),
        ("", None),
        (None, None),
        ("nan", None),
        ("inf", None),
    ],
)
def test_parse_retry_after_seconds(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value) == expected


def test_parse_retry_after_http_date() -> None:
    now = 1_767_225_600.0
    assert parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now=now) == 30.0
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0
    assert parse_retry_after("Thu, 01 Jan 2026 00:00:30", now=now) is None  # no zone


# --- RetryingModel ------------------------------------------------------------------------


@both
async def test_429_waits_as_long_as_retry_after_says(
    api: str, client: MakeClient, sleep: FakeSleep
) -> None:
    wire = Wire(
        reply(f"{api}/error_429.json", status=429, headers={"retry-after": "7"}),
        reply(f"{api}/plain.json"),
    )
    response = await RetryingModel(build(api, client(wire)), sleep=sleep).request(REQUEST)
    assert response.text == "你好！今天过得怎么样？"
    assert sleep.delays == [7.0]
    assert len(wire.requests) == 2


@both
async def test_429_retry_after_on_a_stream(api: str, client: MakeClient, sleep: FakeSleep) -> None:
    wire = Wire(
        reply(f"{api}/error_429.json", status=429, headers={"retry-after": "2"}),
        sse(f"{api}/stream_text.sse"),
    )
    events = await collect(RetryingModel(build(api, client(wire)), sleep=sleep))
    assert isinstance(events[-1], Done)
    assert sleep.delays == [2.0]


async def test_retry_after_http_date(client: MakeClient, sleep: FakeSleep) -> None:
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    wire = Wire(
        reply("openai/error_429.json", status=429, headers={"retry-after": when}),
        reply("openai/plain.json"),
    )
    await RetryingModel(kimi(client(wire)), sleep=sleep).request(REQUEST)
    (delay,) = sleep.delays
    assert 17 < delay <= 20


async def test_retry_after_is_capped(client: MakeClient, sleep: FakeSleep) -> None:
    wire = Wire(
        reply("anthropic/error_429.json", status=429, headers={"retry-after": "3600"}),
        reply("anthropic/plain.json"),
    )
    await RetryingModel(claude(client(wire)), max_delay=8, sleep=sleep).request(REQUEST)
    assert sleep.delays == [32.0]


async def test_backoff_doubles_with_jitter(client: MakeClient, sleep: FakeSleep) -> None:
    wire = Wire(*[reply("openai/error_500.json", status=500)] * 4, reply("openai/plain.json"))
    model = RetryingModel(
        kimi(client(wire)), attempts=5, base_delay=1, max_delay=5, sleep=sleep, rng=random.Random(4)
    )
    await model.request(REQUEST)
    assert len(sleep.delays) == 4
    for delay, backoff in zip(sleep.delays, [1, 2, 4, 5], strict=True):
        assert backoff / 2 <= delay <= backoff
    assert len(set(sleep.delays)) == 4


@both
async def test_gives_up_after_attempts(api: str, client: MakeClient, sleep: FakeSleep) -> None:
    wire = Wire(*[reply(f"{api}/error_500.json", status=500)] * 3)
    with pytest.raises(ModelError) as caught:
        await RetryingModel(build(api, client(wire)), sleep=sleep).request(REQUEST)
    assert caught.value.status == 500
    assert caught.value.retryable
    assert caught.value.__notes__ == ["gave up after 3 attempts"]
    assert len(wire.requests) == 3
    assert len(sleep.delays) == 2


@both
async def test_not_retryable_is_not_retried(api: str, client: MakeClient, sleep: FakeSleep) -> None:
    wire = Wire(reply(f"{api}/error_500.json", status=400))
    with pytest.raises(ModelError) as caught:
        await RetryingModel(build(api, client(wire)), sleep=sleep).request(REQUEST)
    assert caught.value.status == 400
    assert len(wire.requests) == 1
    assert sleep.delays == []


@both
async def test_timeout_and_malformed_json_are_retried(
    api: str, client: MakeClient, sleep: FakeSleep
) -> None:
    wire = Wire(
        httpx.ReadTimeout("read timed out"),
        httpx.Response(200, content=b'{"id": "x", "cho'),
        reply(f"{api}/plain.json"),
    )
    response = await RetryingModel(build(api, client(wire)), sleep=sleep).request(REQUEST)
    assert response.text
    assert len(sleep.delays) == 2


@both
async def test_a_hanging_request_times_out(api: str, client: MakeClient, sleep: FakeSleep) -> None:
    wire = Wire(hang(), hang())
    started = time.monotonic()
    model = RetryingModel(build(api, client(wire)), attempts=2, timeout=0.05, sleep=sleep)
    with pytest.raises(ModelError, match=r"no answer within 0\.05s") as caught:
        await model.request(REQUEST)
    assert caught.value.retryable
    assert len(wire.requests) == 2
    assert time.monotonic() - started < 1


@both
async def test_stream_retried_before_its_first_event(
    api: str, client: MakeClient, sleep: FakeSleep
) -> None:
    cut = fixture_text(f"{api}/stream_text.sse")[:120]  # not even one complete event
    wire = Wire(httpx.Response(200, content=cut.encode()), sse(f"{api}/stream_text.sse"))
    events = await collect(RetryingModel(build(api, client(wire)), sleep=sleep))
    assert "".join(e.text for e in events_of(TextDelta, events)) == "你好！今天过得怎么样？"
    assert len(wire.requests) == 2
    assert len(sleep.delays) == 1


@both
async def test_stream_cut_after_events_is_retried_with_a_restart(
    api: str, client: MakeClient, sleep: FakeSleep
) -> None:
    # Nothing reaches a user before the turn commits, so a stream broken part-way is
    # tried again like a failed request; the restart tells the caller to drop the deltas.
    head = fixture_text(f"{api}/stream_text.sse")[:700].encode()
    wire = Wire(httpx.Response(200, stream=BrokenStream(head)), sse(f"{api}/stream_text.sse"))
    received: list[StreamEvent] = []
    await drain(RetryingModel(build(api, client(wire)), sleep=sleep).stream(REQUEST), received)
    restarts = [i for i, e in enumerate(received) if isinstance(e, StreamRestart)]
    (restart,) = events_of(StreamRestart, received)
    assert "could not talk" in restart.reason
    before, after = received[: restarts[0]], received[restarts[0] + 1 :]
    assert events_of(TextDelta, before)  # the cut stream had shown some text
    done = after[-1]
    assert isinstance(done, Done)
    assert "".join(e.text for e in events_of(TextDelta, after)) == done.response.text
    assert len(wire.requests) == 2 and len(sleep.delays) == 1


async def test_cut_streams_give_up_after_the_attempts(client: MakeClient, sleep: FakeSleep) -> None:
    head = fixture_text("openai/stream_text.sse")[:700].encode()
    wire = Wire(*(httpx.Response(200, stream=BrokenStream(head)) for _ in range(3)))
    received: list[StreamEvent] = []
    with pytest.raises(ModelError, match="could not talk") as caught:
        await drain(
            RetryingModel(build("openai", client(wire)), sleep=sleep).stream(REQUEST), received
        )
    assert len(events_of(StreamRestart, received)) == 2  # before attempts 2 and 3
    assert len(wire.requests) == 3
    assert "gave up after 3 attempts" in str(caught.value.__notes__)


async def test_cut_stream_retry_honours_retry_after_rules(
    client: MakeClient, sleep: FakeSleep
) -> None:
    # An in-stream error event after some text: retried with the same waits as a request.
    events = fixture_text("anthropic/stream_text.sse").split("\n\n")
    error = fixture_text("anthropic/stream_error.sse").split("\n\n")[1]
    body = "\n\n".join([*events[:4], error, ""]).encode()
    wire = Wire(
        httpx.Response(200, content=body, headers={"content-type": "text/event-stream"}),
        sse("anthropic/stream_text.sse"),
    )
    received: list[StreamEvent] = []
    await drain(
        RetryingModel(build("anthropic", client(wire)), sleep=sleep).stream(REQUEST), received
    )
    assert len(events_of(StreamRestart, received)) == 1
    assert isinstance(received[-1], Done)
    assert len(sleep.delays) == 1 and 0.25 <= sleep.delays[0] <= 0.5


@both
async def test_stalled_stream_times_out(api: str, client: MakeClient, sleep: FakeSleep) -> None:
    head = fixture_text(f"{api}/stream_text.sse")[:700].encode()
    wire = Wire(*(httpx.Response(200, stream=StallingStream(head)) for _ in range(3)))
    started = time.monotonic()
    model = RetryingModel(build(api, client(wire)), timeout=0.1, sleep=sleep)
    received: list[StreamEvent] = []
    with pytest.raises(ModelError, match=r"stalled: nothing arrived for 0\.1s") as caught:
        await drain(model.stream(REQUEST), received)
    assert caught.value.retryable
    assert len(events_of(StreamRestart, received)) == 2
    assert time.monotonic() - started < 2


async def test_stream_stalled_before_any_event_is_retried(
    client: MakeClient, sleep: FakeSleep
) -> None:
    wire = Wire(
        httpx.Response(200, stream=StallingStream(b": hello\n\n")), sse("openai/stream_text.sse")
    )
    events = await collect(RetryingModel(kimi(client(wire)), timeout=0.1, sleep=sleep))
    assert isinstance(events[-1], Done)
    assert len(sleep.delays) == 1


def test_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RetryingModel(FallbackModel([_Answer("x")]), attempts=0)


# --- FallbackModel ------------------------------------------------------------------------


class _Answer(Model):
    def __init__(self, name: str, error: ModelError | None = None) -> None:
        self.name = name
        self.error = error
        self.calls = 0

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return ModelResponse(text=f"from {self.name}", model=self.name)


@pytest.mark.parametrize(("first", "second"), [("openai", "anthropic"), ("anthropic", "openai")])
async def test_500_then_fallback(
    first: str, second: str, client: MakeClient, sleep: FakeSleep
) -> None:
    failing = Wire(*[reply(f"{first}/error_500.json", status=500)] * 3)
    working = Wire(reply(f"{second}/plain.json"))
    model = FallbackModel(
        [
            RetryingModel(build(first, client(failing)), sleep=sleep),
            RetryingModel(build(second, client(working)), sleep=sleep),
        ]
    )
    response = await model.request(REQUEST)
    assert response.model == build(second, client(Wire())).name
    assert response.text == "你好！今天过得怎么样？"
    assert (len(failing.requests), len(working.requests)) == (3, 1)  # retried first
    assert model.name == build(first, client(Wire())).name


@pytest.mark.parametrize(("first", "second"), [("openai", "anthropic"), ("anthropic", "openai")])
async def test_500_then_fallback_streamed(
    first: str, second: str, client: MakeClient, sleep: FakeSleep
) -> None:
    failing = Wire(reply(f"{first}/error_500.json", status=503))
    working = Wire(sse(f"{second}/stream_text.sse"))
    model = FallbackModel(
        [
            RetryingModel(build(first, client(failing)), attempts=1, sleep=sleep),
            RetryingModel(build(second, client(working)), attempts=1, sleep=sleep),
        ]
    )
    events = await collect(model)
    done = events[-1]
    assert isinstance(done, Done)
    assert done.response.model == build(second, client(Wire())).name


async def test_config_error_falls_through() -> None:
    first = _Answer(
        "moonshot:kimi-k3", ModelConfigError("moonshot:kimi-k3", "set MOONSHOT_API_KEY")
    )
    second = _Answer("deepseek:deepseek-chat")
    response = await FallbackModel([first, second]).request(REQUEST)
    assert response.text == "from deepseek:deepseek-chat"


async def test_refused_key_falls_through_without_retries(
    client: MakeClient, sleep: FakeSleep
) -> None:
    refused = Wire(httpx.Response(401, json={"error": {"message": "Invalid Authentication"}}))
    model = FallbackModel([RetryingModel(kimi(client(refused)), sleep=sleep), _Answer("b")])
    assert (await model.request(REQUEST)).text == "from b"
    assert len(refused.requests) == 1
    assert sleep.delays == []


async def test_a_bad_request_does_not_fall_through() -> None:
    second = _Answer("b")
    model = FallbackModel([_Answer("a", ModelError("a", "HTTP 400: bad", status=400)), second])
    with pytest.raises(ModelError, match="HTTP 400"):
        await model.request(REQUEST)
    assert second.calls == 0


async def test_every_model_failed() -> None:
    model = FallbackModel(
        [
            _Answer("a", ModelConfigError("a", "set A_KEY to use a")),
            _Answer("b", ModelError("b", "HTTP 503: down", status=503, retryable=True)),
        ]
    )
    with pytest.raises(ModelError) as caught:
        await model.request(REQUEST)
    error = caught.value
    assert type(error) is ModelError
    assert str(error) == "a: every model failed: a: set A_KEY to use a; b: HTTP 503: down"
    assert (error.status, error.retryable) == (503, True)
    assert isinstance(error.__cause__, ModelError)


async def test_no_model_usable_is_a_config_error() -> None:
    model = FallbackModel(
        [
            _Answer("a", ModelConfigError("a", "set A_KEY to use a")),
            _Answer("b", ModelConfigError("b", "set B_KEY to use b")),
        ]
    )
    with pytest.raises(ModelConfigError, match=r"set A_KEY.*set B_KEY"):
        await collect(model)


async def test_single_failure_is_raised_as_is() -> None:
    error = ModelError("a", "HTTP 503", status=503, retryable=True)
    with pytest.raises(ModelError) as caught:
        await FallbackModel([_Answer("a", error)]).request(REQUEST)
    assert caught.value is error


async def test_stream_falls_through_after_a_cut_with_a_restart(client: MakeClient) -> None:
    head = fixture_text("openai/stream_text.sse")[:700].encode()
    second = _Answer("b")
    model = FallbackModel(
        [kimi(client(Wire(httpx.Response(200, stream=BrokenStream(head))))), second]
    )
    events = await collect(model)
    assert second.calls == 1
    restart = next(i for i, e in enumerate(events) if isinstance(e, StreamRestart))
    assert events[restart + 1 :] == [
        TextDelta("from b"),
        Done(ModelResponse(text="from b", model="b")),
    ]


async def test_stream_of_a_model_without_streaming() -> None:
    events = await collect(
        FallbackModel([_Answer("a", ModelError("a", "x", retryable=True)), _Answer("b")])
    )
    assert events == [TextDelta("from b"), Done(ModelResponse(text="from b", model="b"))]


def test_fallback_needs_a_model() -> None:
    with pytest.raises(ValueError, match="at least one"):
        FallbackModel([])


async def test_aclose_reaches_owned_clients() -> None:
    inner = OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1")
    inner._client()
    model = FallbackModel([RetryingModel(inner), _Answer("b")])
    await model.aclose()
    assert inner._http is None


@both
async def test_leaving_a_stream_early_closes_it(api: str, client: MakeClient) -> None:
    wire = Wire(sse(f"{api}/stream_text.sse"))
    model = FallbackModel([RetryingModel(build(api, client(wire)))])
    events = model.stream(REQUEST)
    first = await anext(aiter(events))
    assert isinstance(first, TextDelta)
    await events.aclose()  # type: ignore[attr-defined]
    assert len(wire.requests) == 1
