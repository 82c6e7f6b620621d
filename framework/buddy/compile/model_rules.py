"""What a provider's API refuses or ignores in a model mapping, found at validate time.

The rules come from the provider's row (:mod:`buddy.models.providers`), never from its
name: a request the API would refuse with HTTP 400 (Anthropic's sampling and thinking
rules) is an **error**, located at the offending key; a setting the provider cannot take
(``thinking`` where no thinking setting exists, a budget where only an on/off switch
exists) is a **warning**: the buddy still runs, without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from buddy.manifest.model_options import FallbackOptions, ModelOptions, ThinkingOptions
from buddy.manifest.yamlio import YamlPath
from buddy.models.providers import PROVIDERS, Provider, ThinkingStyle, infer_provider

__all__ = ["Finding", "check_model"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem of a model mapping: where, how bad, what and how to fix it."""

    severity: Literal["error", "warning"]
    path: YamlPath
    code: str
    message: str
    hint: str = ""


def check_model(ref: object, path: YamlPath) -> Iterator[Finding]:
    """The findings of the model reference at ``path`` and of its fallbacks."""
    if not isinstance(ref, ModelOptions | FallbackOptions):
        return  # a string names no settings
    provider = PROVIDERS[ref.provider or str(infer_provider(ref.name))]
    if provider.sampling_exclusive and ref.temperature is not None and ref.top_p is not None:
        yield Finding(
            "error",
            (*path, "top_p"),
            "model-sampling",
            f"{provider.title} refuses `temperature` and `top_p` together",
            "keep one of them (temperature is the usual choice)",
        )
    yield from _thinking(ref, provider, path)
    if isinstance(ref, ModelOptions):
        for index, fallback in enumerate(ref.fallbacks):
            yield from check_model(fallback, (*path, "fallbacks", index))


def _thinking(
    ref: ModelOptions | FallbackOptions, provider: Provider, path: YamlPath
) -> Iterator[Finding]:
    value = ref.thinking
    if value is None:
        return
    options = value if isinstance(value, ThinkingOptions) else ThinkingOptions(enabled=value)
    where = (*path, "thinking")
    style = provider.thinking_style
    if style is None:
        yield Finding(
            "warning",
            where,
            "thinking-unsupported",
            f"{provider.title} has no thinking setting buddy can send: `thinking` is ignored",
            "a model that always thinks needs no setting; see docs/models.md",
        )
        return
    if not options.enabled:
        if not style.switch:
            yield Finding(
                "warning",
                where,
                "thinking-unsupported",
                f"{provider.title} cannot turn thinking off: `thinking: false` is ignored",
                "pick a model that does not think",
            )
        return
    if options.budget_tokens is not None and not style.budget:
        yield Finding(
            "warning",
            (*where, "budget_tokens"),
            "thinking-unsupported",
            f"{provider.title} takes no thinking budget: `budget_tokens` is ignored",
            "its thinking is switched on or off; see docs/models.md",
        )
    if options.effort is not None and not style.effort:
        yield Finding(
            "warning",
            (*where, "effort"),
            "thinking-unsupported",
            f"{provider.title} takes no thinking effort: `effort` is ignored",
            "see docs/models.md for what it takes",
        )
    yield from _with_thinking(ref, options, provider, style, path)


def _with_thinking(
    ref: ModelOptions | FallbackOptions,
    options: ThinkingOptions,
    provider: Provider,
    style: ThinkingStyle,
    path: YamlPath,
) -> Iterator[Finding]:
    """What the API refuses in a request that thinks (each a 400 at run time)."""
    where = (*path, "thinking")
    if ref.temperature is not None and not style.temperature:
        yield Finding(
            "error",
            (*path, "temperature"),
            "thinking-sampling",
            f"{provider.title} refuses `temperature` with thinking on",
            "remove `temperature`, or turn thinking off",
        )
    if ref.top_p is not None and style.min_top_p is not None and ref.top_p < style.min_top_p:
        yield Finding(
            "error",
            (*path, "top_p"),
            "thinking-sampling",
            f"{provider.title} takes `top_p` from {style.min_top_p:g} to 1 with thinking on, "
            f"not {ref.top_p:g}",
            f"raise it to at least {style.min_top_p:g} or remove it",
        )
    adaptive = provider.thinks_adaptively(ref.name)
    budget = options.budget_tokens
    if budget is not None and adaptive:
        yield Finding(
            "warning",
            (*where, "budget_tokens"),
            "thinking-budget",
            f"`{ref.name}` thinks adaptively: a token budget is deprecated there and refused "
            "by later models",
            "write `effort: low|medium|high` instead",
        )
    if budget is not None and budget < style.min_budget:
        yield Finding(
            "error",
            (*where, "budget_tokens"),
            "thinking-budget",
            f"{provider.title} takes a thinking budget of at least {style.min_budget} "
            f"tokens, not {budget}",
            f"raise `budget_tokens` to {style.min_budget} or more",
        )
    if budget is None and not adaptive:
        budget = style.budget_for(None, options.effort)
    if (
        style.budget_below_max_tokens
        and budget is not None
        and ref.max_tokens is not None
        and ref.max_tokens <= budget
    ):
        yield Finding(
            "error",
            (*path, "max_tokens"),
            "thinking-budget",
            f"{provider.title} needs `max_tokens` above the thinking budget "
            f"({budget} tokens), not {ref.max_tokens}",
            f"raise `max_tokens` above {budget}, lower the budget, or leave `max_tokens` "
            "out (buddy then leaves room for the reply on top of the budget)",
        )
