"""The models of ``model:`` (and of a profile's): a model reference, as a string or a
mapping with sampling options, thinking and fallbacks."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Discriminator, Field, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from buddy.manifest.fields import Strict
from buddy.manifest.suggest import choices
from buddy.models.providers import BASE_URL_PATTERN, PROVIDERS, infer_provider, split_ref

__all__ = ["FallbackOptions", "ModelOptions", "ModelRef", "ThinkingOptions"]


def _check_model_ref(value: str) -> str:
    provider, name, base_url = split_ref(value)
    if base_url is not None and not re.match(BASE_URL_PATTERN, base_url):
        raise PydanticCustomError(
            "model-base-url",
            "the endpoint after `@` is not an http(s) URL: `{url}`",
            {"url": base_url},
        )
    if provider is not None:
        if provider not in PROVIDERS:
            raise PydanticCustomError(
                "unknown-provider",
                "unknown model provider `{provider}`",
                {"provider": provider, "hint": choices(provider, tuple(PROVIDERS))},
            )
        if not name:
            raise PydanticCustomError(
                "unknown-model",
                "the model name after `{provider}:` is empty",
                {"provider": provider},
            )
        if provider == "openai-compatible" and base_url is None:
            raise PydanticCustomError(
                "model-base-url",
                "`openai-compatible` needs its endpoint: write `openai-compatible:{name}@URL` "
                "(e.g. `openai-compatible:{name}@http://127.0.0.1:11434/v1`), or the mapping "
                "form with `base_url`",
                {"name": name},
            )
        return value
    if infer_provider(name) is None:
        raise PydanticCustomError(
            "unknown-model",
            "cannot tell the provider of model `{name}`: write `provider:{name}` "
            "(providers: {providers})",
            {"name": name, "providers": ", ".join(PROVIDERS)},
        )
    return value


ModelString = Annotated[
    str,
    Field(
        min_length=1,
        description="`provider:name`, a bare model name (kimi-*, deepseek-*, qwen*, glm-*, "
        "doubao-*, gemini-*, grok-*, gpt-*, o1…, claude-* …), `offline` or `test`; "
        "`@URL` after it names the endpoint (`openai-compatible:qwen3@http://127.0.0.1:11434/v1`).",
    ),
    AfterValidator(_check_model_ref),
]


class ThinkingOptions(Strict):
    """Thinking before answering, in detail (``thinking: true`` is all defaults)."""

    enabled: bool = Field(default=True, description="Thinking on or off.")
    budget_tokens: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Tokens it may think for (Anthropic: at least 1024, below `max_tokens`).",
    )
    effort: Literal["low", "medium", "high"] | None = Field(
        default=None, description="How hard it thinks, where the provider takes an effort."
    )

    @model_validator(mode="after")
    def _one_amount(self) -> ThinkingOptions:
        if self.budget_tokens is not None and self.effort is not None:
            raise PydanticCustomError(
                "thinking-options",
                "give `budget_tokens` or `effort`, not both: providers take one of them",
            )
        return self


def _thinking_tag(value: Any) -> str:
    return "thinking-bool" if isinstance(value, bool) else "thinking-mapping"


ThinkingRef = Annotated[
    Annotated[bool, Tag("thinking-bool")] | Annotated[ThinkingOptions, Tag("thinking-mapping")],
    Discriminator(_thinking_tag),
]


class _ModelOptionsBase(Strict):
    provider: str | None = Field(
        default=None,
        description="Provider id; inferred from `name` when omitted.",
        json_schema_extra={"enum": [*PROVIDERS, None]},
    )
    name: str = Field(min_length=1, max_length=200, description="The provider's model name.")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    top_p: float | None = Field(default=None, gt=0, le=1)
    base_url: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="Endpoint override; required for `openai-compatible`.",
    )
    thinking: ThinkingRef | None = Field(
        default=None,
        description="Think before answering: `true`/`false`, or `budget_tokens`/`effort` "
        "(how each provider takes it: docs/models.md).",
    )

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str | None) -> str | None:
        if value is not None and value not in PROVIDERS:
            raise PydanticCustomError(
                "unknown-provider",
                "unknown model provider `{provider}`",
                {"provider": value, "hint": choices(value, tuple(PROVIDERS))},
            )
        return value

    @model_validator(mode="after")
    def _resolvable(self) -> _ModelOptionsBase:
        if self.provider is None and infer_provider(self.name) is None:
            raise PydanticCustomError(
                "unknown-model",
                "cannot tell the provider of model `{name}`: add `provider:`",
                {"name": self.name},
            )
        if self.provider == "openai-compatible" and not self.base_url:
            raise PydanticCustomError("model-base-url", "`openai-compatible` needs `base_url`")
        return self


class FallbackOptions(_ModelOptionsBase):
    """A fallback model in mapping form (fallbacks do not nest)."""


def _model_tag(value: Any) -> str:
    return "model-string" if isinstance(value, str) else "model-options"


FallbackRef = Annotated[
    Annotated[ModelString, Tag("model-string")] | Annotated[FallbackOptions, Tag("model-options")],
    Discriminator(_model_tag),
]


class ModelOptions(_ModelOptionsBase):
    """The model in mapping form, with sampling options and fallbacks."""

    fallbacks: list[FallbackRef] = Field(
        default_factory=list,
        max_length=8,
        description="Models tried in order when this one keeps failing.",
    )


ModelRef = Annotated[
    Annotated[ModelString, Tag("model-string")] | Annotated[ModelOptions, Tag("model-options")],
    Discriminator(_model_tag),
]
