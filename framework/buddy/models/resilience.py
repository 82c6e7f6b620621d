"""Retries, timeouts and fallbacks around any :class:`~buddy.models.base.Model`, and the
failure handling the HTTP providers share.

:class:`RetryingModel` tries one model again on errors marked ``retryable`` (429, 5xx,
connection errors, timeouts, malformed or cut responses), waiting with exponential
backoff and jitter, or as long as the provider's ``Retry-After`` says. :class:`FallbackModel`
then moves down the manifest's ``fallbacks``.

The helpers below the two classes turn what httpx reports — a status, a transport
exception, a server-sent-events body — into :class:`~buddy.errors.ModelError` with the
right ``status``, ``retryable`` and ``retry_after``, so the providers stay about their
wire formats and this module decides nothing by provider.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import math
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import httpx

from buddy.errors import ModelConfigError, ModelError
from buddy.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    StreamEvent,
    StreamRestart,
    Thinking,
)

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


class HttpModel(Model):
    """What the HTTP providers share: their client, default sampling settings, and a
    one-piece request. Subclasses build the body, read the answer, and stream."""

    url: str

    def _init_http(
        self,
        *,
        model: str,
        provider: str,
        api_key_env: str,
        http: httpx.AsyncClient | None,
        timeout: float,
        temperature: float | None,
        max_tokens: int | None,
        top_p: float | None,
        thinking: Thinking | None,
        headers: dict[str, str],
    ) -> None:
        self.model_name = model
        self.name = f"{provider}:{model}"
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.top_p = top_p
        self.thinking = thinking
        self._headers = headers
        self._http = http
        self._owns_http = http is None

    def body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The request body in the provider's wire format."""
        raise NotImplementedError

    def _response(self, data: Any) -> ModelResponse:
        raise NotImplementedError

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient()
        return self._http

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` in one piece.

        Raises:
            ModelError: The provider refused or failed, or answered malformed JSON.
        """
        data = await post_json(
            self.name,
            self._client(),
            self.url,
            self.body(request, stream=False),
            headers=self._headers,
            timeout=self.timeout,
            key_env=self.api_key_env,
        )
        return self._response(data)

    async def aclose(self) -> None:
        """Close the HTTP client if this model opened it."""
        if self._owns_http and self._http is not None:
            await self._http.aclose()
            self._http = None


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


# --- What the HTTP providers share: turning httpx's view of a failure into a ModelError.

#: Statuses worth another try besides 5xx: request timeout, conflict (a lock on the
#: provider's side) and rate limits — the ones the official OpenAI and Anthropic SDKs retry.
_RETRYABLE = frozenset({408, 409, 429})
#: Statuses that mean the model is not usable as configured: a refused key, a wrong URL
#: or model name. Raised as ModelConfigError so a fallback is tried.
_CONFIG = frozenset({401, 403, 404})


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait according to a ``Retry-After`` header value.

    Args:
        value: The header: delay seconds (``"7"``, ``"1.5"``) or an HTTP date.
        now: The current Unix time (default: the clock); for tests.

    Returns:
        The delay (never negative), or ``None`` when there is no usable value.
    """
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # a date without a zone is not HTTP's format; guess UTC
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(seconds, 0.0)


def retry_after_of(response: httpx.Response) -> float | None:
    """The wait a response asks for: ``retry-after-ms`` (OpenAI) or ``Retry-After``."""
    milliseconds = parse_retry_after(response.headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    return parse_retry_after(response.headers.get("retry-after"))


def error_from_response(model: str, response: httpx.Response, *, key_env: str = "") -> ModelError:
    """The error for a response with a 4xx/5xx status; its body must have been read.

    Args:
        model: ``provider:name`` of the model.
        response: The failed response.
        key_env: The API key's environment variable, named when the key is refused.
    """
    status = response.status_code
    detail = _error_detail(response)
    if status in _CONFIG:
        hint = ""
        if status in (401, 403) and key_env:
            hint = f" — check the key in {key_env}"
        elif status == 404:
            hint = " — check the model name and base_url"
        error: ModelError = ModelConfigError(model, f"HTTP {status}: {detail}{hint}")
        error.status = status
        return error
    return ModelError(
        model,
        f"HTTP {status}: {detail}",
        status=status,
        retryable=status in _RETRYABLE or status >= 500,
        retry_after=retry_after_of(response),
    )


def error_from_transport(model: str, exc: httpx.HTTPError) -> ModelError:
    """The error for an exception httpx raised while talking to a provider."""
    url = ""
    with contextlib.suppress(RuntimeError):  # .request is unset on some raw errors
        url = str(exc.request.url)
    where = f" ({url})" if url else ""
    if isinstance(exc, httpx.UnsupportedProtocol):
        return ModelConfigError(model, f"the base_url is not an http(s) URL{where}: {exc}")
    if isinstance(exc, httpx.TimeoutException):
        kind = type(exc).__name__
        return ModelError(model, f"timed out ({kind}){where}", retryable=True)
    if isinstance(exc, httpx.RemoteProtocolError):
        return ModelError(
            model,
            f"the connection broke before the response was complete{where}: {exc}",
            retryable=True,
        )
    if isinstance(exc, httpx.TransportError):
        reason = str(exc) or type(exc).__name__
        return ModelError(model, f"could not talk to the provider{where}: {reason}", retryable=True)
    return ModelError(model, f"HTTP error{where}: {exc}", retryable=False)


def decode_json(model: str, text: str | bytes, *, what: str = "response") -> Any:
    """Parse JSON from a provider; malformed text is a retryable :class:`ModelError`.

    The message says where the JSON broke, never what it said: the text may be a reply
    that quotes the user's data, and error messages get logged.
    """
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ModelError(
            model, f"malformed JSON in the {what} ({len(text)} long): {exc.args[0]}", retryable=True
        ) from exc


def malformed(model: str, what: str) -> ModelError:
    """The error for JSON that parsed but is not in the shape the API documents."""
    return ModelError(model, f"unexpected response shape: {what}", retryable=True)


async def sse_events(model: str, response: httpx.Response) -> AsyncGenerator[tuple[str, str], None]:
    """The server-sent events of a streamed response, as ``(event, data)`` pairs.

    ``event`` is the ``event:`` field (``message`` when absent); ``data`` joins the
    event's ``data:`` lines. Comments (``: keep-alive``) are skipped. An event still
    pending when the body ends is yielded too: the provider decides whether the stream
    was complete.

    Raises:
        ModelError: A transport failure while reading (connection reset, timeout).
    """
    event = ""
    data: list[str] = []
    try:
        async for line in response.aiter_lines():
            if not line:
                if data:
                    yield event or "message", "\n".join(data)
                event, data = "", []
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                data.append(value)
            elif field == "event":
                event = value
    except httpx.HTTPError as exc:
        raise error_from_transport(model, exc) from exc
    if data:
        yield event or "message", "\n".join(data)


def cut_stream(model: str, expected: str) -> ModelError:
    """The error for a stream whose body ended before its end marker."""
    return ModelError(
        model, f"the stream ended before {expected}: the response is incomplete", retryable=True
    )


def http_timeout(seconds: float) -> httpx.Timeout:
    """The httpx timeout of one request: ``seconds`` for each read (so, in a stream, the
    longest silence between two pieces), write and pool wait; connecting gets at most 10s."""
    return httpx.Timeout(seconds, connect=min(seconds, 10.0))


async def post_json(
    model: str,
    http: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    *,
    headers: dict[str, str],
    timeout: float,
    key_env: str = "",
) -> Any:
    """POST ``body`` as JSON and return the decoded JSON answer.

    Raises:
        ModelError: For an error status, a transport failure or a malformed body.
    """
    async with open_stream(
        model, http, url, body, headers=headers, timeout=timeout, key_env=key_env
    ) as response:
        try:
            content = await response.aread()
        except httpx.HTTPError as exc:
            raise error_from_transport(model, exc) from exc
    return decode_json(model, content)


@contextlib.asynccontextmanager
async def open_stream(
    model: str,
    http: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    *,
    headers: dict[str, str],
    timeout: float,
    key_env: str = "",
) -> AsyncIterator[httpx.Response]:
    """POST ``body`` as JSON and hold the streamed response open while the block runs.

    Raises:
        ModelError: For an error status or a transport failure while connecting.
    """
    request = http.build_request(
        "POST",
        url,
        content=_encode(body),
        headers=_json_headers(headers),
        timeout=http_timeout(timeout),
    )
    try:
        response = await http.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise error_from_transport(model, exc) from exc
    try:
        if response.status_code >= 400:
            with contextlib.suppress(httpx.HTTPError):  # the status says enough without it
                await response.aread()
            raise error_from_response(model, response, key_env=key_env)
        yield response
    finally:
        await response.aclose()


def _encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def _error_detail(response: httpx.Response) -> str:
    """The provider's own error message when the body has one, else the body's start."""
    try:
        text = response.text
    except (httpx.ResponseNotRead, UnicodeDecodeError):
        return response.reason_phrase or "error"
    message = ""
    with contextlib.suppress(ValueError):
        data = json.loads(text)
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            message = str(error.get("message") or error.get("type") or "")
        elif isinstance(error, str):
            message = error
        elif isinstance(data, dict) and isinstance(data.get("message"), str):
            message = data["message"]
    message = message or text.strip() or response.reason_phrase or "error"
    return message[:300] + ("…" if len(message) > 300 else "")


def _json_headers(headers: dict[str, str]) -> dict[str, str]:
    return {"content-type": "application/json", "accept": "application/json", **headers}
