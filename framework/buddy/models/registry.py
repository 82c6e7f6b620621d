"""From a compiled :class:`~buddy.models.base.ModelSpec` to a :class:`Model`.

``resolve`` builds the provider model for the spec's wire format, wraps it in
:class:`~buddy.models.resilience.RetryingModel`, and chains the spec's ``fallbacks``
after it in a :class:`~buddy.models.resilience.FallbackModel`.

API keys come from the environment only — the variable the provider preset names —
never from the manifest, so a ``buddy.yaml`` can be shared and reviewed without secrets.

When a key is missing:

- if **no** model of the chain can be used, ``resolve`` raises
  :class:`~buddy.errors.ModelConfigError` at once, naming every variable to set: a run
  that could never answer should fail before it starts, not on the first message;
- otherwise each unusable model is kept in its place and raises ``ModelConfigError`` when
  asked, so the chain falls through to the next model; ``resolve`` logs a warning for each,
  since quietly answering with a fallback would hide the mistake.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from buddy.errors import ModelConfigError
from buddy.models.anthropic import AnthropicModel
from buddy.models.base import Model, ModelRequest, ModelResponse, ModelSpec, StreamEvent
from buddy.models.openai import OpenAIChatModel
from buddy.models.providers import PROVIDERS
from buddy.models.resilience import FallbackModel, RetryingModel, Sleep

__all__ = ["UnusableModel", "resolve"]

logger = logging.getLogger("buddy.models")


def resolve(
    spec: ModelSpec,
    *,
    env: Mapping[str, str] | None = None,
    http: httpx.AsyncClient | None = None,
    sleep: Sleep = asyncio.sleep,
) -> Model:
    """The model a spec names, with retries and its fallbacks.

    Args:
        spec: The compiled model spec (the manifest's, or ``--model``'s).
        env: Where API keys are read (default: ``os.environ``).
        http: The HTTP client every provider model shares (default: each opens its own).
        sleep: How retries wait; tests pass a fake.

    Returns:
        The model: a bare in-process model for ``test`` and ``offline`` (no network, so
        nothing to retry — and tests keep direct access to the scripted model), a
        ``RetryingModel`` for a provider, a ``FallbackModel`` when there are fallbacks.

    Raises:
        ModelConfigError: No model of the chain can be used (a missing API key, a
            provider that needs a ``base_url``, an unknown wire format).
    """
    environ = os.environ if env is None else env
    chain = (spec, *spec.fallbacks)
    models: list[Model] = []
    problems: list[ModelConfigError] = []
    for item in chain:
        try:
            models.append(_build(item, environ, http, sleep))
        except ModelConfigError as error:
            problems.append(error)
            models.append(UnusableModel(item.ref, str(error).removeprefix(f"{item.ref}: ")))
    if len(problems) == len(chain):
        if len(problems) == 1:
            raise problems[0]
        raise ModelConfigError(spec.ref, "no model can be used: " + "; ".join(map(str, problems)))
    for problem in problems:
        logger.warning("%s — skipped: its fallbacks answer instead", problem)
    return models[0] if len(models) == 1 else FallbackModel(models)


class UnusableModel(Model):
    """Stands in a fallback chain for a model that cannot be used as configured.

    Every request raises :class:`~buddy.errors.ModelConfigError`, which a
    :class:`~buddy.models.resilience.FallbackModel` passes over.

    Args:
        name: ``provider:name`` of the model.
        reason: Why it cannot be used, e.g. which variable to set.
    """

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Raise the configuration error.

        Raises:
            ModelConfigError: Always.
        """
        raise ModelConfigError(self.name, self.reason)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Raise the configuration error.

        Raises:
            ModelConfigError: Always.
        """
        raise ModelConfigError(self.name, self.reason)
        yield  # pragma: no cover - makes this an async generator


def _build(
    spec: ModelSpec, env: Mapping[str, str], http: httpx.AsyncClient | None, sleep: Sleep
) -> Model:
    if spec.api == "local":
        return _local(spec)
    if spec.api not in ("openai", "anthropic"):
        raise ModelConfigError(
            spec.ref, f"unknown API {spec.api!r}: expected 'openai', 'anthropic' or 'local'"
        )
    if not spec.base_url:
        raise ModelConfigError(
            spec.ref, f"provider {spec.provider} has no default endpoint: set model.base_url"
        )
    preset = PROVIDERS.get(spec.provider)
    api_key = env.get(spec.api_key_env) if spec.api_key_env else None
    required = preset.key_required if preset is not None else True
    if spec.api_key_env and required and not api_key:
        raise ModelConfigError(
            spec.ref, f"the API key is missing: set {spec.api_key_env} to use {spec.ref}"
        )
    common: dict[str, Any] = {
        "provider": spec.provider,
        "base_url": spec.base_url,
        "api_key": api_key or None,
        "api_key_env": spec.api_key_env,
        "http": http,
        "temperature": spec.temperature,
        "max_tokens": spec.max_tokens,
        "top_p": spec.top_p,
        "thinking": spec.thinking,
    }
    model: Model
    if spec.api == "openai":
        model = OpenAIChatModel(spec.name, **common)
    else:
        model = AnthropicModel(spec.name, **common)
    return RetryingModel(model, sleep=sleep)


def _local(spec: ModelSpec) -> Model:
    # Imported here: the in-process models are not needed by a provider-backed run.
    from buddy.models.testing import OfflineModel, TestModel

    if spec.provider == "test":
        return TestModel()
    if spec.provider == "offline":
        return OfflineModel()
    raise ModelConfigError(spec.ref, "the local models are 'test' and 'offline'")
