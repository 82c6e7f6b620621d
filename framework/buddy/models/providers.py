"""The table of known model providers and how a model reference resolves to one.

Pure data and string handling: imported by the manifest loader, so it must never pull in
an HTTP client.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PROVIDERS", "Provider", "infer_provider"]


@dataclass(frozen=True, slots=True)
class Provider:
    """A model provider preset.

    Attributes:
        name: The provider id used in ``provider:name``.
        api: The wire format: ``openai`` (chat completions), ``anthropic`` (messages),
            or ``local`` for the in-process ``offline`` and ``test`` models.
        base_url: Default endpoint; empty when the manifest must give one.
        api_key_env: Environment variable holding the key; empty when none is needed.
    """

    name: str
    api: str
    base_url: str
    api_key_env: str


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("moonshot", "openai", "https://api.moonshot.cn/v1", "MOONSHOT_API_KEY"),
        Provider("deepseek", "openai", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        Provider(
            "dashscope",
            "openai",
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "DASHSCOPE_API_KEY",
        ),
        Provider("zhipu", "openai", "https://open.bigmodel.cn/api/paas/v4", "ZHIPUAI_API_KEY"),
        Provider("openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        Provider("anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
        Provider("ollama", "openai", "http://127.0.0.1:11434/v1", ""),
        Provider("vllm", "openai", "http://127.0.0.1:8000/v1", ""),
        Provider("openai-compatible", "openai", "", "OPENAI_COMPATIBLE_API_KEY"),
        Provider("offline", "local", "", ""),
        Provider("test", "local", "", ""),
    )
}

# Bare model names resolve by prefix, in this order.
_PREFIXES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"kimi-"), "moonshot"),
    (re.compile(r"deepseek-"), "deepseek"),
    (re.compile(r"qwen"), "dashscope"),
    (re.compile(r"glm-"), "zhipu"),
    (re.compile(r"gpt-|o\d"), "openai"),
    (re.compile(r"claude-"), "anthropic"),
)


def infer_provider(model_name: str) -> str | None:
    """The provider a bare model name belongs to, or ``None`` when no prefix matches.

    ``offline`` and ``test`` name themselves.
    """
    if model_name in ("offline", "test"):
        return model_name
    for pattern, provider in _PREFIXES:
        if pattern.match(model_name):
            return provider
    return None
