"""What a provider's failure means: httpx's view of it — a status, a transport exception,
a body that is no JSON or not in the documented shape, a stream cut short — turned into a
:class:`~buddy.errors.ModelError` with the right ``status``, ``retryable`` and
``retry_after``, so the providers stay about their wire formats and nothing here is decided
by provider. :class:`~buddy.models.resilience.RetryingModel` and
:class:`~buddy.models.resilience.FallbackModel` act on what these say.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import math
import time
from typing import Any

import httpx

from buddy.errors import ModelConfigError, ModelError

__all__ = [
    "cut_stream",
    "decode_json",
    "error_from_response",
    "error_from_transport",
    "malformed",
    "parse_retry_after",
    "retry_after_of",
]

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


def cut_stream(model: str, expected: str) -> ModelError:
    """The error for a stream whose body ended before its end marker."""
    return ModelError(
        model, f"the stream ended before {expected}: the response is incomplete", retryable=True
    )


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
