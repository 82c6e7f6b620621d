"""The table of known model providers and how a model reference resolves to one.

Every difference between providers that buddy knows of is data in a :class:`Provider`
row: where the endpoint is, which variable holds the key, which model names are its own,
what it supports, which reasoning fields it sends and which it needs back, and how its
thinking is configured. The provider models (:mod:`buddy.models.openai`,
:mod:`buddy.models.anthropic`) read a row and branch on its fields, never on a
provider's name.

Pure data and string handling: imported by the manifest loader, so it must never pull in
an HTTP client.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "BASE_URL_PATTERN",
    "PROVIDERS",
    "THINKING_STYLES",
    "Provider",
    "ThinkingStyle",
    "infer_provider",
    "split_ref",
]


@dataclass(frozen=True, slots=True)
class ThinkingStyle:
    """How one family of APIs takes the manifest's ``model.thinking``.

    Attributes:
        name: The style's id, used by the provider models to write the request.
        switch: ``thinking: true/false`` turns thinking on and off.
        budget: ``budget_tokens`` is sent.
        effort: ``effort`` (``low``/``medium``/``high``) is sent.
        body: What the request carries, for the docs.
        min_budget: The least ``budget_tokens`` the API takes.
        effort_budgets: The budget sent for each effort (and ``default_budget`` for
            ``thinking: true``) where the model takes a budget rather than an effort.
        default_budget: See ``effort_budgets``.
        budget_below_max_tokens: The API wants ``max_tokens`` above the budget.
        temperature: Whether ``temperature`` may be set with thinking on.
        min_top_p: The least ``top_p`` the API takes with thinking on.
    """

    name: str
    switch: bool
    budget: bool
    effort: bool
    body: str
    min_budget: int = 1
    effort_budgets: Mapping[str, int] = field(default_factory=dict)
    default_budget: int | None = None
    budget_below_max_tokens: bool = False
    temperature: bool = True
    min_top_p: float | None = None

    def budget_for(self, budget_tokens: int | None, effort: str | None) -> int | None:
        """The token budget a model that takes one thinks with: ``budget_tokens`` as
        written, else the budget of ``effort``, else :attr:`default_budget`."""
        if budget_tokens is not None:
            return budget_tokens
        return self.effort_budgets.get(effort or "", self.default_budget)


THINKING_STYLES: Mapping[str, ThinkingStyle] = MappingProxyType(
    {
        s.name: s
        for s in (
            ThinkingStyle(
                "anthropic",
                switch=True,
                budget=True,
                effort=True,
                body='`thinking: {"type": "adaptive"}` and `output_config: {"effort": …}` on '
                "models that think adaptively (Claude Opus/Sonnet 4.6 and later); elsewhere "
                '`thinking: {"type": "enabled", "budget_tokens": N}` (effort picks N: low 2048, '
                'medium 10000, high 16384; `true` alone 10000); off: `{"type": "disabled"}`',
                min_budget=1024,
                # pydantic-ai's numbers for the same choice.
                effort_budgets={"low": 2048, "medium": 10000, "high": 16384},
                default_budget=10000,
                budget_below_max_tokens=True,
                temperature=False,
                min_top_p=0.95,
            ),
            ThinkingStyle(
                "type",
                switch=True,
                budget=False,
                effort=False,
                body='`thinking: {"type": "enabled"}` / `{"type": "disabled"}`',
            ),
            ThinkingStyle(
                "type_effort",
                switch=True,
                budget=False,
                effort=True,
                body='`thinking: {"type": "enabled"}` / `{"type": "disabled"}`, and '
                '`reasoning_effort: "low" | "medium" | "high"`',
            ),
            ThinkingStyle(
                "enable_thinking",
                switch=True,
                budget=True,
                effort=False,
                body="`enable_thinking: true/false`, `thinking_budget: N`",
            ),
            ThinkingStyle(
                "reasoning_effort",
                switch=False,
                budget=False,
                effort=True,
                body='`reasoning_effort: "low" | "medium" | "high"`',
            ),
            ThinkingStyle(
                "openrouter",
                switch=True,
                budget=True,
                effort=True,
                body='`reasoning: {"enabled": true/false, "max_tokens": N, "effort": "…"}`',
            ),
        )
    }
)


@dataclass(frozen=True, slots=True)
class Provider:
    """A model provider preset: everything buddy knows about one provider, as data.

    Attributes:
        name: The provider id used in ``provider:name``.
        api: The wire format: ``openai`` (chat completions), ``anthropic`` (messages),
            or ``local`` for the in-process ``offline`` and ``test`` models.
        base_url: Default endpoint; empty when the manifest must give one.
        api_key_env: Environment variable holding the key; empty when none is needed.
        title: The provider as people call it, for docs and messages.
        docs: Where its API is documented.
        prefixes: Bare model names that belong to it (regular expressions matched at the
            start of the name; the table's order decides between rows).
        key_required: Whether a run needs the key; when not, it is sent only if set.
        headers: Extra headers every request carries.
        extra_body: Extra body fields every request carries.
        max_tokens_field: The body field for the output limit.
        stream_usage: Whether it accepts ``stream_options.include_usage`` (token counts
            at the end of a stream); when not, the option is not sent.
        reasoning: The response fields read as reasoning text, first present wins.
        pass_back: The assistant-message fields it needs again, exactly as it sent them,
            on every step of the turn that called tools (e.g. DeepSeek's
            ``reasoning_content``: without it the next request of the turn is refused).
        signed_pass_back: Fields that go back only to the very model that wrote them
            (signatures): Anthropic's thinking blocks, Gemini's ``extra_content`` of
            tool calls, OpenRouter's ``reasoning_details``.
        thinking: The :data:`THINKING_STYLES` entry its API uses; empty when a manifest
            cannot configure thinking there.
        sampling_exclusive: Refuses ``temperature`` and ``top_p`` in one request.
        adaptive_thinking: Model names (patterns matched at the start) whose thinking is
            adaptive, sized by effort rather than by a token budget.
        notes: Quirks, for the docs.
    """

    name: str
    api: str
    base_url: str
    api_key_env: str
    title: str = ""
    docs: str = ""
    prefixes: tuple[str, ...] = ()
    key_required: bool = True
    headers: Mapping[str, str] = field(default_factory=dict)
    extra_body: Mapping[str, object] = field(default_factory=dict)
    max_tokens_field: str = "max_tokens"
    stream_usage: bool = True
    reasoning: tuple[str, ...] = ("reasoning_content", "reasoning")
    pass_back: tuple[str, ...] = ()
    signed_pass_back: tuple[str, ...] = ()
    thinking: str = ""
    sampling_exclusive: bool = False
    adaptive_thinking: tuple[str, ...] = ()
    notes: str = ""

    @property
    def thinking_style(self) -> ThinkingStyle | None:
        """The style of :attr:`thinking`, or ``None``."""
        return THINKING_STYLES.get(self.thinking)

    def thinks_adaptively(self, model_name: str) -> bool:
        """Whether ``model_name`` matches :attr:`adaptive_thinking`."""
        return any(re.match(pattern, model_name) for pattern in self.adaptive_thinking)


_LOCAL = "a server on this machine; no key"

PROVIDERS: Mapping[str, Provider] = MappingProxyType(
    {
        p.name: p
        for p in (
            Provider(
                "moonshot",
                "openai",
                "https://api.moonshot.cn/v1",
                "MOONSHOT_API_KEY",
                title="Moonshot AI (Kimi)",
                docs="https://platform.moonshot.cn/docs",
                prefixes=(r"kimi-", r"moonshot-v1"),
                pass_back=("reasoning_content",),
                thinking="type",
                notes="Thinking models (`kimi-k2-thinking`, `kimi-k2.5` with thinking on) "
                "send `reasoning_content`; it goes back with every tool-calling step of "
                "the turn, as Moonshot's guide to its thinking models asks.",
            ),
            Provider(
                "deepseek",
                "openai",
                "https://api.deepseek.com/v1",
                "DEEPSEEK_API_KEY",
                title="DeepSeek",
                docs="https://api-docs.deepseek.com",
                prefixes=(r"deepseek-",),
                pass_back=("reasoning_content",),
                thinking="type_effort",
                notes="In thinking mode (on by default for `deepseek-v4-*`; "
                "`deepseek-reasoner`) the API answers HTTP 400 when a step that called "
                "tools comes back without its `reasoning_content`, in that turn and in "
                "every later one; steps without tool calls need none.",
            ),
            Provider(
                "dashscope",
                "openai",
                "https://dashscope.aliyuncs.com/compatible-mode/v1",
                "DASHSCOPE_API_KEY",
                title="Alibaba Cloud Model Studio (DashScope, Qwen)",
                docs="https://help.aliyun.com/zh/model-studio/",
                prefixes=(r"qwen", r"qwq-"),
                thinking="enable_thinking",
                notes="Qwen3 thinking is switched with `enable_thinking`; its "
                "`reasoning_content` need not be sent back.",
            ),
            Provider(
                "zhipu",
                "openai",
                "https://open.bigmodel.cn/api/paas/v4",
                "ZHIPUAI_API_KEY",
                title="Zhipu AI (GLM)",
                docs="https://docs.bigmodel.cn",
                prefixes=(r"glm-",),
                pass_back=("reasoning_content",),
                thinking="type",
            ),
            Provider(
                "volcengine",
                "openai",
                "https://ark.cn-beijing.volces.com/api/v3",
                "ARK_API_KEY",
                title="Volcengine Ark (Doubao)",
                docs="https://www.volcengine.com/docs/82379",
                prefixes=(r"doubao-",),
                thinking="type",
                notes="A model is named by its model id or by an endpoint id (`ep-…`, "
                "which needs `volcengine:` written out).",
            ),
            Provider(
                "minimax",
                "openai",
                "https://api.minimaxi.com/v1",
                "MINIMAX_API_KEY",
                title="MiniMax",
                docs="https://platform.minimaxi.com/docs",
                prefixes=(r"MiniMax-",),
                extra_body={"reasoning_split": True},
                pass_back=("reasoning_details",),
                notes="MiniMax-M2 and later would put their thinking into the reply inside "
                "`<think>…</think>`: buddy asks for it apart (`reasoning_split: true`), so "
                "users never see it, and sends the `reasoning_details` back as received. "
                "Outside mainland China use `base_url: https://api.minimax.io/v1`.",
            ),
            Provider(
                "siliconflow",
                "openai",
                "https://api.siliconflow.cn/v1",
                "SILICONFLOW_API_KEY",
                title="SiliconFlow",
                docs="https://docs.siliconflow.cn",
                thinking="enable_thinking",
                notes="Model names carry their publisher (`Qwen/Qwen3-32B`, "
                "`deepseek-ai/DeepSeek-V3.2`): write `siliconflow:` before them.",
            ),
            Provider(
                "openrouter",
                "openai",
                "https://openrouter.ai/api/v1",
                "OPENROUTER_API_KEY",
                title="OpenRouter",
                docs="https://openrouter.ai/docs",
                signed_pass_back=("reasoning_details",),
                thinking="openrouter",
                notes="Model names carry their publisher (`anthropic/claude-sonnet-4.5`): "
                "write `openrouter:` before them. `reasoning_details` go back unchanged "
                "to the model that wrote them.",
            ),
            Provider(
                "gemini",
                "openai",
                "https://generativelanguage.googleapis.com/v1beta/openai",
                "GEMINI_API_KEY",
                title="Google Gemini (OpenAI-compatible endpoint)",
                docs="https://ai.google.dev/gemini-api/docs/openai",
                prefixes=(r"gemini-",),
                signed_pass_back=("extra_content",),
                thinking="reasoning_effort",
                notes="Gemini signs its tool calls (`extra_content.google.thought_signature`); "
                "each signature goes back with its call for the rest of the turn.",
            ),
            Provider(
                "groq",
                "openai",
                "https://api.groq.com/openai/v1",
                "GROQ_API_KEY",
                title="Groq",
                docs="https://console.groq.com/docs",
                thinking="reasoning_effort",
                notes="Model names are shared with their publishers (`llama-3.3-70b-versatile`, "
                "`openai/gpt-oss-120b`, `qwen/qwen3-32b`): write `groq:` before them.",
            ),
            Provider(
                "mistral",
                "openai",
                "https://api.mistral.ai/v1",
                "MISTRAL_API_KEY",
                title="Mistral AI",
                docs="https://docs.mistral.ai",
                prefixes=(
                    r"mistral-",
                    r"magistral-",
                    r"codestral-",
                    r"ministral-",
                    r"devstral-",
                    r"pixtral-",
                    r"open-mistral-",
                ),
                stream_usage=False,
                notes="Sends token counts at the end of every stream without "
                "`stream_options` (which it does not take).",
            ),
            Provider(
                "xai",
                "openai",
                "https://api.x.ai/v1",
                "XAI_API_KEY",
                title="xAI (Grok)",
                docs="https://docs.x.ai",
                prefixes=(r"grok-",),
                thinking="reasoning_effort",
            ),
            Provider(
                "openai",
                "openai",
                "https://api.openai.com/v1",
                "OPENAI_API_KEY",
                title="OpenAI",
                docs="https://platform.openai.com/docs/api-reference/chat",
                prefixes=(r"gpt-", r"o\d", r"chatgpt-"),
                max_tokens_field="max_completion_tokens",
                thinking="reasoning_effort",
                notes="Reasoning models refuse `max_tokens`: buddy sends `max_completion_tokens`.",
            ),
            Provider(
                "anthropic",
                "anthropic",
                "https://api.anthropic.com",
                "ANTHROPIC_API_KEY",
                title="Anthropic (Claude)",
                docs="https://docs.anthropic.com/en/api/messages",
                prefixes=(r"claude-",),
                reasoning=(),
                signed_pass_back=("thinking",),
                thinking="anthropic",
                sampling_exclusive=True,
                # 4.6 and later (not the dated claude-opus-4-20250514), and 5 onwards.
                adaptive_thinking=(
                    r"claude-(opus|sonnet)-4-([6-9]|1\d)(?!\d)",
                    r"claude-[a-z]+-[5-9](?!\d)",
                ),
                notes="Recent models refuse `temperature` and `top_p` together, and with "
                "thinking on any `temperature` and a `top_p` below 0.95: `buddy validate` "
                "says so. Thinking blocks go back, signed and unchanged, before the "
                "`tool_use` blocks of their step; a step another model answered makes the "
                "next request of the turn think no more (the API refuses it otherwise).",
            ),
            Provider(
                "ollama",
                "openai",
                "http://127.0.0.1:11434/v1",
                "",
                title="Ollama",
                docs="https://github.com/ollama/ollama/blob/main/docs/openai.md",
                notes=_LOCAL,
            ),
            Provider(
                "vllm",
                "openai",
                "http://127.0.0.1:8000/v1",
                "",
                title="vLLM",
                docs="https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html",
                notes=_LOCAL,
            ),
            Provider(
                "lmstudio",
                "openai",
                "http://127.0.0.1:1234/v1",
                "",
                title="LM Studio",
                docs="https://lmstudio.ai/docs/app/api/endpoints/openai",
                notes=_LOCAL,
            ),
            Provider(
                "llamacpp",
                "openai",
                "http://127.0.0.1:8080/v1",
                "",
                title="llama.cpp server",
                docs="https://github.com/ggml-org/llama.cpp/tree/master/tools/server",
                notes=_LOCAL + "; start it with `--jinja` for tool calls",
            ),
            Provider(
                "openai-compatible",
                "openai",
                "",
                "OPENAI_COMPATIBLE_API_KEY",
                title="Any OpenAI-compatible endpoint",
                key_required=False,
                notes="The endpoint is required: `openai-compatible:NAME@URL` or the "
                "mapping form's `base_url`. The key is sent when the variable is set.",
            ),
            Provider("offline", "local", "", "", title="offline (in-process echo)"),
            Provider("test", "local", "", "", title="test (in-process, scripted)"),
        )
    }
)

_PREFIXES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(prefix), p.name) for p in PROVIDERS.values() for prefix in p.prefixes
)

#: What an endpoint given in a model reference must look like.
BASE_URL_PATTERN = r"^https?://[^\s@]+$"
_AT_URL = re.compile(r"@(?=https?://)")


def infer_provider(model_name: str) -> str | None:
    """The provider a bare model name belongs to, or ``None`` when no prefix matches.

    ``offline`` and ``test`` name themselves. A name that carries its publisher
    (``deepseek-ai/DeepSeek-V3.2``, ``qwen/qwen3-32b``) is a hosting provider's name and
    never inferred: the same model is on several of them.
    """
    if model_name in ("offline", "test"):
        return model_name
    if "/" in model_name:
        return None
    for pattern, provider in _PREFIXES:
        if pattern.match(model_name):
            return provider
    return None


def split_ref(ref: str) -> tuple[str | None, str, str | None]:
    """``provider:name@base_url`` as ``(provider or None, name, base_url or None)``.

    The endpoint follows the last ``@`` that starts an ``http://`` or ``https://`` URL,
    so a model name may itself hold an ``@`` (``claude-sonnet-4@20250514``).
    """
    head, base_url = ref, None
    parts = _AT_URL.split(ref)
    if len(parts) > 1:
        head, base_url = "@".join(parts[:-1]), parts[-1]
    provider, sep, name = head.partition(":")
    if not sep:
        return None, head, base_url
    return provider, name, base_url
