"""From a ModelSpec to a model: presets, keys from the environment, retries, fallbacks."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Callable

import httpx
import pytest

from buddy.compile.blueprint import ModelSpec
from buddy.errors import ModelConfigError
from buddy.models.anthropic import AnthropicModel
from buddy.models.base import Done
from buddy.models.openai import OpenAIChatModel
from buddy.models.providers import PROVIDERS
from buddy.models.registry import UnusableModel, resolve
from buddy.models.resilience import FallbackModel, RetryingModel
from buddy.models.testing import OfflineModel, TestModel
from tests.conftest import REPO
from tests.models.conftest import REQUEST, FakeSleep, Wire, reply, sse

pytestmark = pytest.mark.anyio

MakeClient = Callable[[Wire], httpx.AsyncClient]


def spec(ref: str, *fallbacks: ModelSpec, **options: object) -> ModelSpec:
    provider, _, name = ref.partition(":")
    preset = PROVIDERS[provider]
    return ModelSpec(
        provider,
        name,
        preset.api,
        str(options.pop("base_url", preset.base_url)),
        preset.api_key_env,
        fallbacks=fallbacks,
        **options,  # type: ignore[arg-type]
    )


def test_openai_compatible_preset() -> None:
    model = resolve(spec("moonshot:kimi-k3"), env={"MOONSHOT_API_KEY": "sk-moon"})
    assert isinstance(model, RetryingModel)
    inner = model.model
    assert isinstance(inner, OpenAIChatModel)
    assert model.name == inner.name == "moonshot:kimi-k3"
    assert inner.url == "https://api.moonshot.cn/v1/chat/completions"
    assert inner.max_tokens_field == "max_tokens"


def test_anthropic_preset() -> None:
    model = resolve(spec("anthropic:claude-sonnet-4-5"), env={"ANTHROPIC_API_KEY": "sk-ant"})
    assert isinstance(model, RetryingModel)
    assert isinstance(model.model, AnthropicModel)
    assert model.model.url == "https://api.anthropic.com/v1/messages"


def test_local_models_are_not_wrapped() -> None:
    assert isinstance(resolve(spec("test:test"), env={}), TestModel)
    assert isinstance(resolve(spec("offline:offline"), env={}), OfflineModel)


async def test_key_and_settings_reach_the_wire(client: MakeClient) -> None:
    wire = Wire(reply("openai/plain.json"))
    model = resolve(
        spec("deepseek:deepseek-chat", temperature=0.4, max_tokens=300, top_p=0.95),
        env={"DEEPSEEK_API_KEY": "sk-deep"},
        http=client(wire),
    )
    response = await model.request(REQUEST)
    assert response.model == "deepseek:deepseek-chat"
    sent = wire.requests[0]
    assert str(sent.url) == "https://api.deepseek.com/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-deep"
    body = wire.bodies[0]
    assert (body["temperature"], body["max_tokens"], body["top_p"]) == (0.4, 300, 0.95)


async def test_openai_itself_gets_max_completion_tokens(client: MakeClient) -> None:
    wire = Wire(reply("openai/plain.json"))
    model = resolve(
        spec("openai:gpt-5-mini", max_tokens=64), env={"OPENAI_API_KEY": "k"}, http=client(wire)
    )
    await model.request(REQUEST)
    assert wire.bodies[0]["max_completion_tokens"] == 64


async def test_keyless_presets_send_no_key(client: MakeClient) -> None:
    wire = Wire(reply("openai/plain.json"), reply("openai/plain.json"))
    for ref in ("ollama:qwen3:8b", "vllm:Qwen/Qwen3-8B"):
        await resolve(spec(ref), env={}, http=client(wire)).request(REQUEST)
    assert [str(r.url) for r in wire.requests] == [
        "http://127.0.0.1:11434/v1/chat/completions",
        "http://127.0.0.1:8000/v1/chat/completions",
    ]
    assert all("authorization" not in r.headers for r in wire.requests)
    assert wire.bodies[0]["model"] == "qwen3:8b"


async def test_manifest_base_url_wins(client: MakeClient) -> None:
    wire = Wire(reply("anthropic/plain.json"))
    model = resolve(
        spec("anthropic:claude-haiku-4-5", base_url="http://127.0.0.1:9000"),
        env={"ANTHROPIC_API_KEY": "sk-ant"},
        http=client(wire),
    )
    await model.request(REQUEST)
    assert str(wire.requests[0].url) == "http://127.0.0.1:9000/v1/messages"
    assert wire.requests[0].headers["x-api-key"] == "sk-ant"


def test_missing_key_fails_early_naming_the_variable() -> None:
    with pytest.raises(ModelConfigError) as caught:
        resolve(spec("moonshot:kimi-k3"), env={"DEEPSEEK_API_KEY": "k"})
    assert "set MOONSHOT_API_KEY to use moonshot:kimi-k3" in str(caught.value)
    assert caught.value.model == "moonshot:kimi-k3"


def test_empty_key_counts_as_missing() -> None:
    with pytest.raises(ModelConfigError, match="MOONSHOT_API_KEY"):
        resolve(spec("moonshot:kimi-k3"), env={"MOONSHOT_API_KEY": ""})


def test_keys_come_from_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZHIPUAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="ZHIPUAI_API_KEY"):
        resolve(spec("zhipu:glm-5"))
    monkeypatch.setenv("ZHIPUAI_API_KEY", "k")
    assert resolve(spec("zhipu:glm-5")).name == "zhipu:glm-5"


def test_no_model_of_the_chain_usable() -> None:
    chain = spec("moonshot:kimi-k3", spec("deepseek:deepseek-chat"))
    with pytest.raises(ModelConfigError) as caught:
        resolve(chain, env={})
    message = str(caught.value)
    assert "set MOONSHOT_API_KEY" in message
    assert "set DEEPSEEK_API_KEY" in message


async def test_primary_without_key_falls_back(
    client: MakeClient, sleep: FakeSleep, caplog: pytest.LogCaptureFixture
) -> None:
    wire = Wire(reply("openai/plain.json"))
    chain = spec("moonshot:kimi-k3", spec("deepseek:deepseek-chat"))
    with caplog.at_level(logging.WARNING, logger="buddy.models"):
        model = resolve(chain, env={"DEEPSEEK_API_KEY": "k"}, http=client(wire), sleep=sleep)
    assert "set MOONSHOT_API_KEY" in caplog.text
    assert isinstance(model, FallbackModel)
    assert isinstance(model.models[0], UnusableModel)
    assert model.name == "moonshot:kimi-k3"
    response = await model.request(REQUEST)
    assert response.model == "deepseek:deepseek-chat"
    assert len(wire.requests) == 1


async def test_fallback_chain_after_500(client: MakeClient, sleep: FakeSleep) -> None:
    wire = Wire(
        *[reply("openai/error_500.json", status=500)] * 3,
        sse("anthropic/stream_text.sse"),
    )
    chain = spec("moonshot:kimi-k3", spec("anthropic:claude-sonnet-4-5"), spec("offline:offline"))
    model = resolve(
        chain,
        env={"MOONSHOT_API_KEY": "a", "ANTHROPIC_API_KEY": "b"},
        http=client(wire),
        sleep=sleep,
    )
    assert isinstance(model, FallbackModel)
    assert [type(m) for m in model.models] == [RetryingModel, RetryingModel, OfflineModel]
    events = [event async for event in model.stream(REQUEST)]
    done = events[-1]
    assert isinstance(done, Done)
    assert done.response.model == "anthropic:claude-sonnet-4-5"
    assert len(sleep.delays) == 2  # the primary was retried before falling back


async def test_unusable_model_streams_the_error() -> None:
    model = UnusableModel("moonshot:kimi-k3", "set MOONSHOT_API_KEY to use moonshot:kimi-k3")
    with pytest.raises(ModelConfigError, match="set MOONSHOT_API_KEY"):
        await model.request(REQUEST)
    with pytest.raises(ModelConfigError, match="set MOONSHOT_API_KEY"):
        _ = [event async for event in model.stream(REQUEST)]


def test_provider_without_endpoint() -> None:
    with pytest.raises(ModelConfigError, match=r"set model\.base_url"):
        resolve(spec("openai-compatible:my-model"), env={"OPENAI_COMPATIBLE_API_KEY": "k"})


def test_unknown_api() -> None:
    odd = ModelSpec("moonshot", "kimi-k3", "grpc", "https://x", "")
    with pytest.raises(ModelConfigError, match="unknown API 'grpc'"):
        resolve(odd, env={})


def test_validate_path_does_not_import_httpx() -> None:
    code = (
        "import sys, buddy.models, buddy.models.providers, buddy.models.base\n"
        "assert 'httpx' not in sys.modules, 'httpx imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
