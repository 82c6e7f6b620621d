"""Any OpenAI-compatible chat-completions endpoint: OpenAI itself, Moonshot (Kimi),
DeepSeek, DashScope (Qwen), Zhipu (GLM), Ollama, vLLM …

One ``POST {base_url}/chat/completions``, answered in one piece or as server-sent events
(``data: {chunk}`` lines ending with ``data: [DONE]``). Tool-call arguments stream in
fragments keyed by the call's ``index``; with ``stream_options.include_usage`` the last
chunk (with no choices) carries the token counts. Reasoning models of DeepSeek and Kimi
send their reasoning as ``reasoning_content`` (vLLM and others as ``reasoning``).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from buddy.errors import ModelError
from buddy.models.base import (
    Done,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from buddy.models.resilience import (
    HttpModel,
    cut_stream,
    decode_json,
    malformed,
    open_stream,
    sse_events,
)

__all__ = ["OpenAIChatModel"]


class OpenAIChatModel(HttpModel):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Sampling settings given here are defaults: a request's own ``temperature``,
    ``max_tokens`` and ``top_p`` win when set. Failures raise
    :class:`~buddy.errors.ModelError` with ``retryable`` set where another try may help;
    retrying is :class:`~buddy.models.resilience.RetryingModel`'s job, not this class's.

    Args:
        model: The provider's model name, e.g. ``kimi-k3``.
        base_url: The endpoint up to ``/chat/completions``, e.g. ``https://api.moonshot.cn/v1``.
        provider: The provider id, for :attr:`name` (``provider:model``) and messages.
        api_key: Sent as ``Authorization: Bearer``; ``None`` sends no such header
            (Ollama and vLLM need none).
        api_key_env: The variable the key came from, named when the provider refuses it.
        http: The client to use (tests pass one over ``httpx.MockTransport``); by default
            the model opens its own on first use and :meth:`aclose` closes it.
        timeout: Seconds for connecting, sending, and each read: a non-streamed answer
            must start within it, a stream may not fall silent for longer.
        temperature: Default sampling temperature.
        max_tokens: Default output limit.
        top_p: Default nucleus sampling.
        max_tokens_field: The body field for the output limit; OpenAI's own newer models
            want ``max_completion_tokens``, compatible providers ``max_tokens``.
        headers: Extra headers for every request.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        provider: str = "openai",
        api_key: str | None = None,
        api_key_env: str = "",
        http: httpx.AsyncClient | None = None,
        timeout: float = 60.0,
        temperature: float | None = None,
        max_tokens: int | None = None,
        top_p: float | None = None,
        max_tokens_field: str = "max_tokens",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.max_tokens_field = max_tokens_field
        own = dict(headers or {})
        if api_key:
            own["authorization"] = f"Bearer {api_key}"
        self._init_http(
            model=model,
            provider=provider,
            api_key_env=api_key_env,
            http=http,
            timeout=timeout,
            temperature=temperature,
            max_tokens=max_tokens,
            top_p=top_p,
            headers=own,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Answer ``request`` as a stream of deltas ending with :class:`Done`.

        Raises:
            ModelError: As :meth:`request`; also a stream cut before ``data: [DONE]``.
        """
        state = _StreamState(self.name)
        finished = False
        async with (
            open_stream(
                self.name,
                self._client(),
                self.url,
                self.body(request, stream=True),
                headers={**self._headers, "accept": "text/event-stream"},
                timeout=self.timeout,
                key_env=self.api_key_env,
            ) as response,
            contextlib.aclosing(sse_events(self.name, response)) as events,
        ):
            async for _event, data in events:
                if data.strip() == "[DONE]":
                    finished = True
                    break
                for event in state.feed(decode_json(self.name, data, what="stream")):
                    yield event
        if not finished:
            raise cut_stream(self.name, "data: [DONE]")
        yield Done(state.response())

    def body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body for ``request``."""
        body: dict[str, Any] = {"model": self.model_name, "messages": messages(request)}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": dict(tool.parameters),
                    },
                }
                for tool in request.tools
            ]
        settings = {
            "temperature": _first(request.temperature, self.temperature),
            self.max_tokens_field: _first(request.max_tokens, self.max_tokens),
            "top_p": _first(request.top_p, self.top_p),
        }
        body.update({key: value for key, value in settings.items() if value is not None})
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _response(self, data: Any) -> ModelResponse:
        if not isinstance(data, dict):
            raise malformed(self.name, "the answer is not a JSON object")
        _raise_reported_error(self.name, data)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise malformed(self.name, "the answer has no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise malformed(self.name, "the first choice has no message")
        calls = tuple(
            _tool_call(self.name, raw)
            for raw in message.get("tool_calls") or ()
            if isinstance(raw, dict)
        )
        finish = choices[0].get("finish_reason")
        return ModelResponse(
            text=_text(message.get("content")),
            tool_calls=calls,
            reasoning=_reasoning(message),
            usage=_usage(data.get("usage")),
            finish_reason=finish if isinstance(finish, str) else _default_finish(calls),
            model=self.name,
        )


def messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The chat-completions ``messages`` for ``request``: the system prompt first."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        if message.role == "user":
            out.append({"role": "user", "content": message.content})
        elif message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                # A step that only calls tools has no text: null, as the API documents.
                entry["content"] = message.content or None
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in message.tool_calls
                ]
            out.append(entry)
        else:
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": message.content,
                }
            )
    return out


@dataclass
class _PartialCall:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamState:
    """What the chunks of one stream have said so far."""

    model: str
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None

    def feed(self, chunk: Any) -> Iterator[StreamEvent]:
        """The events of one chunk, recording what it adds."""
        if not isinstance(chunk, dict):
            raise malformed(self.model, "a stream chunk is not a JSON object")
        _raise_reported_error(self.model, chunk)
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise malformed(self.model, "a stream chunk's choices are not a list")
        for choice in choices[:1]:  # n is never set, so there is one choice
            if not isinstance(choice, dict):
                raise malformed(self.model, "a stream choice is not a JSON object")
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise malformed(self.model, "a stream choice's delta is not a JSON object")
            reasoning = _reasoning(delta)
            if reasoning:
                self.reasoning.append(reasoning)
                yield ReasoningDelta(reasoning)
            text = _text(delta.get("content"))
            if text:
                self.text.append(text)
                yield TextDelta(text)
            for position, raw in enumerate(delta.get("tool_calls") or ()):
                yield self._call_delta(position, raw)
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = choice["finish_reason"]

    def _call_delta(self, position: int, raw: Any) -> ToolCallDelta:
        if not isinstance(raw, dict):
            raise malformed(self.model, "a streamed tool call is not a JSON object")
        index = raw.get("index", position)
        if not isinstance(index, int):
            raise malformed(self.model, "a streamed tool call has no integer index")
        function = raw.get("function") or {}
        if not isinstance(function, dict):
            raise malformed(self.model, "a streamed tool call's function is not a JSON object")
        call_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        name = function.get("name") if isinstance(function.get("name"), str) else None
        arguments = _arguments(function.get("arguments"))
        partial = self.calls.setdefault(index, _PartialCall())
        # Some providers repeat the id and name on every fragment: the first one counts.
        partial.id = partial.id or call_id or None
        partial.name = partial.name or name or None
        partial.arguments.append(arguments)
        return ToolCallDelta(index, call_id or None, name or None, arguments)

    def response(self) -> ModelResponse:
        """The complete response, once the stream ended."""
        if any(not partial.name for partial in self.calls.values()):
            raise malformed(self.model, "a streamed tool call never got its name")
        calls = tuple(
            ToolCall(
                partial.id or _made_up_id(),
                partial.name or "",
                "".join(partial.arguments) or "{}",
            )
            for _, partial in sorted(self.calls.items())
        )
        return ModelResponse(
            text="".join(self.text),
            tool_calls=calls,
            reasoning="".join(self.reasoning),
            usage=self.usage,
            finish_reason=self.finish_reason or _default_finish(calls),
            model=self.model,
        )


def _first(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


def _text(content: Any) -> str:
    """Message content as text; a few providers send a list of ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _reasoning(message: Mapping[str, Any]) -> str:
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _arguments(value: Any) -> str:
    """Tool-call arguments as text; a few providers send an object instead of a string."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def _tool_call(model: str, raw: Mapping[str, Any]) -> ToolCall:
    function = raw.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise malformed(model, "a tool call has no function name")
    call_id = raw.get("id")
    return ToolCall(
        call_id if isinstance(call_id, str) and call_id else _made_up_id(),
        function["name"],
        _arguments(function.get("arguments")) or "{}",
    )


def _made_up_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
    return Usage(
        input_tokens=prompt if isinstance(prompt, int) else 0,
        output_tokens=completion if isinstance(completion, int) else 0,
    )


def _default_finish(calls: tuple[ToolCall, ...]) -> str:
    return "tool_calls" if calls else "stop"


def _raise_reported_error(model: str, data: Mapping[str, Any]) -> None:
    """Some providers answer 200 with an error object, or send one mid-stream."""
    error = data.get("error")
    if not error:
        return
    message = error.get("message") if isinstance(error, dict) else error
    raise ModelError(model, f"the provider reported an error: {message}", retryable=True)
