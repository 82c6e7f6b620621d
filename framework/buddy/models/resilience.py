"""Retries, timeouts and fallbacks around any :class:`~buddy.models.base.Model`.

:class:`RetryingModel` tries one model again on errors marked ``retryable`` (429, 5xx,
connection errors, timeouts, malformed or cut responses), waiting with exponential
backoff and jitter, or as long as the provider's ``Retry-After`` says. :class:`FallbackModel`
then moves down the manifest's ``fallbacks``.

What a failure is — its ``status``, ``retryable`` and ``retry_after`` — is decided where
httpx reports it, in :mod:`buddy.models.failures`; what the HTTP providers share
(:class:`HttpModel`) is :mod:`buddy.models.transport`; ``parse_retry_after`` and
``HttpModel`` are importable from here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence

from buddy.errors import ModelConfigError, ModelError
from buddy.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    StreamEvent,
    StreamRestart,
)
from buddy.models.failures import parse_retry_after
from buddy.models.transport import HttpModel

__all__ = [
    "FallbackModel",
    "HttpModel",
    "RetryingModel",
    "Sleep",
    "parse_retry_after",
]

logger = logging.getLogger("buddy.models")

#: What :class:`RetryingModel` waits with: ``asyncio.sleep`` or a test's fake.
Sleep = Callable[[float], Awaitable[None]]


class RetryingModel(Model):
    """Tries a model again when it fails in a way that may pass.

    Only errors with ``retryable`` set are retried; the provider decides that (429, 5xx,
    connection errors, timeouts, malformed JSON, a cut stream). The wait before the next
    attempt is the provider's ``Retry-After`` when it sent one (capped at four times
    ``max_delay``, so a confused server cannot park a conversation for an hour), otherwise
    ``base_delay`` doubled per attempt up to ``max_delay``, with jitter so that many
    conversations failing together do not retry in lockstep.

    ``timeout`` is a backstop above the provider's own HTTP timeouts, for any transport:
    a :meth:`request` attempt must finish within it; a :meth:`stream` must produce its next
    event within it (a long reply may stream for longer than ``timeout`` in total). Hitting
    it is a retryable error like any other.

    A stream that fails part-way is retried like a failed request (same attempts, same
    waits): the retry first yields :class:`~buddy.models.base.StreamRestart`, telling the
    caller to drop the deltas it has so far. Nothing reaches a user before the turn is
    committed, so this is safe on every path; the playground's live preview starts over.

    Args:
        model: The model to call.
        attempts: Attempts in total, the first included (``1`` disables retrying).
        base_delay: Seconds before the first retry; doubles per retry.
        max_delay: Longest backoff in seconds (``Retry-After`` may ask for up to four
            times this).
        timeout: Seconds per attempt (see above), or ``None`` for no limit.
        sleep: How to wait; tests pass a fake that records the delays.
        rng: Source of jitter; tests pass a seeded one.
    """

    def __init__(
        self,
        model: Model,
        *,
        attempts: int = 3,
        base_delay: float = 0.5,
        max_delay: float = 8,
        timeout: float | None = 60,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, not {attempts}")
        self.model = model
        self.name = model.name
        self.attempts = attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.timeout = timeout
        self._sleep = sleep
        self._rng = rng or random.Random()

    def delay(self, attempt: int, error: ModelError) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based) with ``error``."""
        if error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self.max_delay * 4)
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        # "Equal jitter": never less than half the backoff, never more than all of it.
        return backoff / 2 + self._rng.random() * backoff / 2

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request``, retrying retryable failures.

        Raises:
            ModelError: The last attempt's error, or the first one that is not retryable.
        """
        attempt = 1
        while True:
            try:
                return await self._attempt(request)
            except ModelError as error:
                await self._before_retry(attempt, error)
            attempt += 1

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream the answer to ``request``, retrying retryable failures.

        A retry after some events first yields :class:`StreamRestart`.

        Raises:
            ModelError: As :meth:`request`.
        """
        attempt = 1
        while True:
            started = False
            try:
                async with contextlib.aclosing(self._idle_guarded(request)) as events:
                    async for event in events:
                        started = True
                        yield event
                return
            except ModelError as error:
                await self._before_retry(attempt, error)
                if started:
                    yield StreamRestart(str(error))
            attempt += 1

    async def aclose(self) -> None:
        """Close the wrapped model's HTTP client, if it owns one."""
        await close_model(self.model)

    async def _attempt(self, request: ModelRequest) -> ModelResponse:
        try:
            async with asyncio.timeout(self.timeout):
                return await self.model.request(request)
        except TimeoutError as exc:
            raise ModelError(
                self.name, f"no answer within {self.timeout:g}s", retryable=True
            ) from exc

    async def _idle_guarded(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        events = aiter(self.model.stream(request))
        try:
            while True:
                try:
                    async with asyncio.timeout(self.timeout):
                        event = await anext(events)
                except StopAsyncIteration:
                    return
                except TimeoutError as exc:
                    raise ModelError(
                        self.name,
                        f"the stream stalled: nothing arrived for {self.timeout:g}s",
                        retryable=True,
                    ) from exc
                yield event
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _before_retry(self, attempt: int, error: ModelError) -> None:
        """Wait before the next attempt, or re-raise ``error`` when there is none."""
        if not error.retryable:
            raise error
        if attempt >= self.attempts:
            if self.attempts > 1:
                error.add_note(f"gave up after {self.attempts} attempts")
            raise error
        delay = self.delay(attempt, error)
        logger.warning(
            "%s; retrying in %.1fs (attempt %d of %d)", error, delay, attempt + 1, self.attempts
        )
        await self._sleep(delay)


class FallbackModel(Model):
    """Tries models in order: the manifest's model, then each of its ``fallbacks``.

    The next model is tried when the previous one raised a retryable
    :class:`~buddy.errors.ModelError` (after its own retries — wrap each in
    :class:`RetryingModel`), **or** a :class:`~buddy.errors.ModelConfigError`: a model
    that cannot be used as configured (its API key variable is not set, or its key was
    refused) is not retryable, but it must not stop a fallback that can answer. Any other
    error (a 400, say: the request itself is wrong) is raised at once, since another model
    would most likely refuse it too.

    A stream that fails part-way falls through the same way, after a
    :class:`~buddy.models.base.StreamRestart`.

    Args:
        models: The models, in the order to try them; at least one.

    Raises:
        ValueError: If ``models`` is empty.
    """

    def __init__(self, models: Sequence[Model]) -> None:
        if not models:
            raise ValueError("FallbackModel needs at least one model")
        self.models = tuple(models)
        self.name = self.models[0].name

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` with the first model that can.

        Raises:
            ModelError: The error of a model that must not fall through, or one naming
                every model's failure when all of them failed (a ``ModelConfigError`` when
                none of them could be used at all).
        """
        errors: list[ModelError] = []
        for model in self.models:
            try:
                return await model.request(request)
            except ModelError as error:
                self._fall_through(model, error, errors)
        raise self._all_failed(errors)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream with the first model that can; falling through after some events
        first yields :class:`StreamRestart`.

        Raises:
            ModelError: As :meth:`request`.
        """
        errors: list[ModelError] = []
        for model in self.models:
            started = False
            try:
                async with contextlib.aclosing(_as_generator(model.stream(request))) as events:
                    async for event in events:
                        started = True
                        yield event
                return
            except ModelError as error:
                self._fall_through(model, error, errors)
                if started and len(errors) < len(self.models):
                    yield StreamRestart(str(error))
        raise self._all_failed(errors)

    async def aclose(self) -> None:
        """Close every model's HTTP client, if they own one."""
        for model in self.models:
            await close_model(model)

    def _fall_through(self, model: Model, error: ModelError, errors: list[ModelError]) -> None:
        if not (error.retryable or isinstance(error, ModelConfigError)):
            raise error
        errors.append(error)
        following = self.models[len(errors)] if len(errors) < len(self.models) else None
        if following is not None:
            logger.warning("%s; falling back to %s", error, following.name)

    def _all_failed(self, errors: list[ModelError]) -> ModelError:
        if len(errors) == 1:
            return errors[0]
        reasons = "; ".join(str(e) for e in errors)
        if all(isinstance(e, ModelConfigError) for e in errors):
            failure: ModelError = ModelConfigError(self.name, f"no model can be used: {reasons}")
        else:
            last = errors[-1]
            failure = ModelError(
                self.name,
                f"every model failed: {reasons}",
                status=last.status,
                retryable=any(e.retryable for e in errors),
            )
        failure.__cause__ = errors[-1]
        return failure


async def close_model(model: Model) -> None:
    """Call ``model.aclose()`` when it has one (the in-process models have none)."""
    aclose = getattr(model, "aclose", None)
    if aclose is not None:
        await aclose()


async def _as_generator(
    events: AsyncIterator[StreamEvent],
) -> AsyncGenerator[StreamEvent, None]:
    """``events`` as an async generator, so ``aclosing`` can close it early."""
    try:
        async for event in events:
            yield event
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
