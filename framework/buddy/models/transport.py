"""What the HTTP providers share: :class:`HttpModel` (their client, default sampling
settings, a one-piece request), the JSON POST, the streamed response held open, and its
server-sent events. Every failure on the way is a :class:`~buddy.errors.ModelError` from
:mod:`buddy.models.failures`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpx

from buddy.models.base import Model, ModelRequest, ModelResponse, Thinking
from buddy.models.failures import decode_json, error_from_response, error_from_transport

__all__ = ["HttpModel", "http_timeout", "open_stream", "post_json", "sse_events"]


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


def _json_headers(headers: dict[str, str]) -> dict[str, str]:
    return {"content-type": "application/json", "accept": "application/json", **headers}
