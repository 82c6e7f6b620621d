"""Any OpenAI-compatible chat-completions endpoint: OpenAI itself, Moonshot (Kimi),
DeepSeek, DashScope (Qwen), Zhipu (GLM), Doubao, MiniMax, Gemini, Groq, Ollama, vLLM …

One ``POST {base_url}/chat/completions``, answered in one piece or as server-sent events
(``data: {chunk}`` lines ending with ``data: [DONE]``). Tool-call arguments stream in
fragments keyed by the call's ``index`` (a server that omits it starts each call with a
new ``id``); with ``stream_options.include_usage`` the last chunk (with no choices)
carries the token counts.

What differs between providers is data in their :class:`~buddy.models.providers.Provider`
row: which fields carry reasoning (``reasoning_content`` of DeepSeek and Kimi,
``reasoning`` of vLLM and OpenRouter, MiniMax's ``reasoning_details``), which of them go
back with each tool-calling step of the turn (:class:`~buddy.models.base.Replay`), and
how thinking is configured.
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
    Message,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    Replay,
    StreamEvent,
    TextDelta,
    Thinking,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from buddy.models.failures import cut_stream, decode_json, malformed
from buddy.models.providers import PROVIDERS, Provider
from buddy.models.transport import HttpModel, open_stream, sse_events

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
        thinking: Default thinking settings, written as the provider's row says.
        max_tokens_field: The body field for the output limit; by default the row's
            (OpenAI's own models want ``max_completion_tokens``, others ``max_tokens``).
        headers: Extra headers for every request, after the row's own.
        rules: The provider's row; by default the one named ``provider`` (an unknown
            name gets ``openai-compatible``'s).
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
        thinking: Thinking | None = None,
        max_tokens_field: str | None = None,
        headers: Mapping[str, str] | None = None,
        rules: Provider | None = None,
    ) -> None:
        self.rules = rules or PROVIDERS.get(provider) or PROVIDERS["openai-compatible"]
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.max_tokens_field = max_tokens_field or self.rules.max_tokens_field
        own = {**self.rules.headers, **(headers or {})}
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
            thinking=thinking,
            headers=own,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Answer ``request`` as a stream of deltas ending with :class:`Done`.

        Raises:
            ModelError: As :meth:`request`; also a stream cut before ``data: [DONE]``.
        """
        state = _StreamState(self.name, self.rules)
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
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages(request, self.rules, self.name),
            **self.rules.extra_body,
        }
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
        body.update(thinking_fields(self.rules.thinking, _first(request.thinking, self.thinking)))
        if stream:
            body["stream"] = True
            if self.rules.stream_usage:
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
        fields = {
            key: message[key]
            for key in (*self.rules.pass_back, *self.rules.signed_pass_back)
            if message.get(key) is not None
        }
        extras = {
            call.id: raw["extra_content"]
            for call, raw in zip(calls, message.get("tool_calls") or (), strict=False)
            if isinstance(raw, dict) and raw.get("extra_content") is not None
        }
        return ModelResponse(
            text=_text(message.get("content")),
            tool_calls=calls,
            reasoning=_reasoning(message, self.rules.reasoning),
            usage=_usage(data.get("usage")),
            finish_reason=finish if isinstance(finish, str) else _default_finish(calls),
            model=self.name,
            replay=_replay(self.name, fields, extras),
        )


def thinking_fields(style: str, thinking: Thinking | None) -> dict[str, Any]:
    """The body fields that say ``thinking`` in a provider's ``style``
    (:data:`~buddy.models.providers.THINKING_STYLES`); nothing for a part the style cannot
    say (``buddy validate`` warns about those)."""
    if thinking is None:
        return {}
    budget, effort = thinking.budget_tokens, thinking.effort
    fields: dict[str, Any]
    if style in ("type", "type_effort"):
        fields = {"thinking": {"type": "enabled" if thinking.enabled else "disabled"}}
        if style == "type_effort" and thinking.enabled and effort:
            fields["reasoning_effort"] = effort
        return fields
    if style == "enable_thinking":
        fields = {"enable_thinking": thinking.enabled}
        if thinking.enabled and budget is not None:
            fields["thinking_budget"] = budget
        return fields
    if style == "reasoning_effort":
        return {"reasoning_effort": effort} if thinking.enabled and effort else {}
    if style == "openrouter":
        reasoning: dict[str, Any] = {"enabled": thinking.enabled}
        if thinking.enabled and effort:
            reasoning["effort"] = effort
        elif thinking.enabled and budget is not None:
            reasoning["max_tokens"] = budget
        return {"reasoning": reasoning}
    return {}


def _replay(model: str, fields: dict[str, Any], extras: dict[str, Any]) -> Replay | None:
    if extras:
        fields = {**fields, "extra_content": extras}
    return Replay(model, fields) if fields else None


def messages(
    request: ModelRequest, rules: Provider | None = None, model: str = ""
) -> list[dict[str, Any]]:
    """The chat-completions ``messages`` for ``request``: the system prompt first.

    An assistant step that called tools carries back what ``rules`` names: the
    ``pass_back`` fields whoever wrote them, the ``signed_pass_back`` fields only to
    ``model``, the model that wrote them.
    """
    rules = rules or PROVIDERS["openai-compatible"]
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        if message.role in ("user", "system"):  # system: a layer's, among the others
            out.append({"role": message.role, "content": message.content})
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
                _write_back(entry, message, rules, model)
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


#: What a tool-calling step of an earlier turn carries as ``reasoning_content`` when the
#: record kept no reasoning for it (a fallback answered, or thinking was off): providers
#: that need the field refuse it missing or empty.
NO_REASONING = " "


def _write_back(entry: dict[str, Any], message: Message, rules: Provider, model: str) -> None:
    """The provider's own fields of an assistant step that called tools: from the
    step's :class:`Replay` within its turn, else (``reasoning_content`` in later turns)
    the reasoning the record kept."""
    replay = message.replay
    fields = replay.fields if replay is not None else {}
    own = replay is not None and replay.model == model
    for key in (*rules.pass_back, *(rules.signed_pass_back if own else ())):
        value = fields.get(key)
        if key == "reasoning_content" and not value:
            value = message.reasoning or NO_REASONING
        if value is None:
            continue
        if key == "extra_content":  # per call, by call id
            for call in entry["tool_calls"]:
                if call["id"] in value:
                    call["extra_content"] = value[call["id"]]
        else:
            entry[key] = value


@dataclass
class _PartialCall:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)
    extra: Any = None


@dataclass
class _StreamState:
    """What the chunks of one stream have said so far."""

    model: str
    rules: Provider
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[_PartialCall] = field(default_factory=list)  # in the order they began
    by_index: dict[int, _PartialCall] = field(default_factory=dict)
    fields: dict[str, list[str]] = field(default_factory=dict)  # replayed text fields
    details: dict[int, dict[str, Any]] = field(default_factory=dict)  # reasoning_details
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
            self._keep(delta)
            reasoning = _reasoning(delta, self.rules.reasoning)
            if reasoning:
                self.reasoning.append(reasoning)
                yield ReasoningDelta(reasoning)
            text = _text(delta.get("content"))
            if text:
                self.text.append(text)
                yield TextDelta(text)
            for raw in delta.get("tool_calls") or ():
                yield self._call_delta(raw)
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = choice["finish_reason"]

    def _keep(self, delta: Mapping[str, Any]) -> None:
        """Collect the fields the provider needs back: text fields join, detail lists
        merge by their ``index``."""
        for key in (*self.rules.pass_back, *self.rules.signed_pass_back):
            value = delta.get(key)
            if isinstance(value, str):
                self.fields.setdefault(key, []).append(value)
            elif key == "reasoning_details" and isinstance(value, list):
                for position, item in enumerate(value):
                    if isinstance(item, dict):
                        _merge_detail(self.details, item, position)

    def _call_delta(self, raw: Any) -> ToolCallDelta:
        if not isinstance(raw, dict):
            raise malformed(self.model, "a streamed tool call is not a JSON object")
        index = raw.get("index")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            raise malformed(self.model, "a streamed tool call's index is not an integer")
        function = raw.get("function") or {}
        if not isinstance(function, dict):
            raise malformed(self.model, "a streamed tool call's function is not a JSON object")
        call_id = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else None
        name = function.get("name") if isinstance(function.get("name"), str) else None
        arguments = _arguments(function.get("arguments"))
        partial = (
            self.by_index.get(index)
            if index is not None
            else (self.calls[-1] if self.calls else None)
        )
        # A new id starts a new call: some servers send no index, or reuse one. Others
        # repeat the id (and name) on every fragment: the same id continues the call.
        if partial is None or (call_id and partial.id and partial.id != call_id):
            partial = _PartialCall()
            self.calls.append(partial)
            if index is not None:
                self.by_index[index] = partial
        partial.id = partial.id or call_id
        partial.name = partial.name or name or None
        partial.arguments.append(arguments)
        if partial.extra is None and raw.get("extra_content") is not None:
            partial.extra = raw["extra_content"]
        ordinal = self.calls.index(partial)
        return ToolCallDelta(ordinal, call_id, name or None, arguments)

    def response(self) -> ModelResponse:
        """The complete response, once the stream ended."""
        if any(not partial.name for partial in self.calls):
            raise malformed(self.model, "a streamed tool call never got its name")
        calls = tuple(
            ToolCall(
                partial.id or _made_up_id(),
                partial.name or "",
                "".join(partial.arguments) or "{}",
            )
            for partial in self.calls
        )
        fields: dict[str, Any] = {key: "".join(parts) for key, parts in self.fields.items()}
        if self.details:
            fields["reasoning_details"] = [self.details[k] for k in sorted(self.details)]
        extras = {
            call.id: partial.extra
            for call, partial in zip(calls, self.calls, strict=True)
            if partial.extra is not None
        }
        return ModelResponse(
            text="".join(self.text),
            tool_calls=calls,
            reasoning="".join(self.reasoning),
            usage=self.usage,
            finish_reason=self.finish_reason or _default_finish(calls),
            model=self.model,
            replay=_replay(self.model, fields, extras),
        )


def _merge_detail(
    details: dict[int, dict[str, Any]], item: Mapping[str, Any], position: int
) -> None:
    """One streamed ``reasoning_details`` entry into the one it continues: its text
    fields are appended, the rest (type, id, format, signature) kept as first given."""
    index = item.get("index")
    key = index if isinstance(index, int) and not isinstance(index, bool) else position
    merged = details.setdefault(key, {})
    for name, value in item.items():
        if name in ("text", "summary", "data") and isinstance(value, str):
            merged[name] = merged.get(name, "") + value
        elif merged.get(name) is None:
            merged[name] = value


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


def _reasoning(message: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    """The reasoning text of a message or delta: the first of ``keys`` present, then
    the text of ``reasoning_details`` entries."""
    for key in keys:
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    details = message.get("reasoning_details")
    if isinstance(details, list):
        return "".join(
            item.get("text") or item.get("summary") or ""
            for item in details
            if isinstance(item, dict)
            and isinstance(item.get("text") or item.get("summary") or "", str)
        )
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
