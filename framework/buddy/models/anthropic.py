"""Anthropic's Messages API.

One ``POST {base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version`` headers.
The system prompt is a top-level field, not a message; a reply is a list of content
blocks (``text``, ``thinking``, ``tool_use``), and tool results go back as ``tool_result``
blocks of a user message — all results of one step in one message. ``max_tokens`` is
required.

Extended thinking (``thinking: {"type": "enabled", "budget_tokens": N}``) answers with
``thinking`` blocks, each with a ``signature`` (or ``redacted_thinking`` blocks with
``data``). Within a tool-use turn the API wants them back, unchanged and before the
``tool_use`` blocks they preceded; they are kept byte for byte in the step's
:class:`~buddy.models.base.Replay` and sent only to the model that wrote them.

Streamed, the answer is a sequence of server-sent events: ``message_start``, then per
block ``content_block_start`` / ``content_block_delta`` (``text_delta``,
``input_json_delta``, ``thinking_delta``, ``signature_delta``) / ``content_block_stop``, then
``message_delta`` (stop reason, output tokens) and ``message_stop``; ``ping`` and
``error`` may come at any point.
"""

from __future__ import annotations

import contextlib
import json
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
from buddy.models.providers import PROVIDERS, THINKING_STYLES
from buddy.models.transport import HttpModel, open_stream, sse_events

__all__ = ["DEFAULT_MAX_TOKENS", "VERSION", "AnthropicModel"]

#: The ``anthropic-version`` header this module speaks.
VERSION = "2023-06-01"
#: The output limit when neither the manifest nor the request sets one (the API needs one).
DEFAULT_MAX_TOKENS = 4096

#: How the API takes thinking: the budgets for each effort and for ``thinking: true``.
STYLE = THINKING_STYLES["anthropic"]
_THINKING_BLOCKS = ("thinking", "redacted_thinking")
#: What starts a system message that goes among the others as the user's text.
SYSTEM_MARK = "[系统提示] "

# Anthropic's stop reasons, in the chat-completions words ModelResponse uses.
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}
# Error types of an ``error`` event (or a 200 body) that another try may get past.
_RETRYABLE_ERRORS = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
)


class AnthropicModel(HttpModel):
    """A Claude model behind the Messages API.

    Sampling settings given here are defaults: a request's own ``temperature``,
    ``max_tokens`` and ``top_p`` win when set. Failures raise
    :class:`~buddy.errors.ModelError` with ``retryable`` set where another try may help.

    Args:
        model: The model name, e.g. ``claude-sonnet-4-5``.
        base_url: The API root (``https://api.anthropic.com``); a trailing ``/v1`` is
            accepted too.
        provider: The provider id, for :attr:`name` (``provider:model``).
        api_key: Sent as ``x-api-key``; ``None`` sends none (a local proxy may not need it).
        api_key_env: The variable the key came from, named when the provider refuses it.
        http: The client to use (tests pass one over ``httpx.MockTransport``); by default
            the model opens its own on first use and :meth:`aclose` closes it.
        timeout: Seconds for connecting, sending, and each read: a non-streamed answer
            must start within it, a stream may not fall silent for longer.
        temperature: Default sampling temperature.
        max_tokens: Default output limit (:data:`DEFAULT_MAX_TOKENS` when ``None``).
        top_p: Default nucleus sampling.
        thinking: Default extended-thinking settings.
        headers: Extra headers for every request (e.g. ``anthropic-beta``).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.anthropic.com",
        provider: str = "anthropic",
        api_key: str | None = None,
        api_key_env: str = "",
        http: httpx.AsyncClient | None = None,
        timeout: float = 60.0,
        temperature: float | None = None,
        max_tokens: int | None = None,
        top_p: float | None = None,
        thinking: Thinking | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.rules = PROVIDERS.get(provider) or PROVIDERS["anthropic"]
        root = base_url.rstrip("/")
        self.url = root + ("/messages" if root.endswith("/v1") else "/v1/messages")
        own = {"anthropic-version": VERSION, **(headers or {})}
        if api_key:
            own["x-api-key"] = api_key
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
            ModelError: As :meth:`request`; also an ``error`` event, or a stream cut
                before ``message_stop``.
        """
        state = _StreamState(self.name)
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
            async for name, data in events:
                for event in state.feed(name, decode_json(self.name, data, what="stream")):
                    yield event
                if state.stopped:
                    break
        if not state.stopped:
            raise cut_stream(self.name, "message_stop")
        yield Done(state.response())

    def body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body for ``request``.

        Thinking is adaptive (``output_config.effort``) on the models the provider's row
        names, and a token budget elsewhere; ``max_tokens`` left unset is then the budget
        plus :data:`DEFAULT_MAX_TOKENS` (the API wants it above the budget). With thinking
        on, ``temperature`` is not sent (the API refuses it; ``buddy validate`` says so).
        A request that continues a tool-use step without a thinking block of this model
        (another model answered it) is sent with thinking off and no thinking blocks, as
        budgeted thinking requires.
        """
        thinking = request.thinking if request.thinking is not None else self.thinking
        config = self.thinking_config(thinking)
        if config.get("type") == "enabled" and not _last_step_thought(request, self.name):
            config = {"type": "disabled"}
        thinks = config.get("type") in ("enabled", "adaptive")
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens is None:
            max_tokens = DEFAULT_MAX_TOKENS + int(config.get("budget_tokens", 0))
        body: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": max_tokens,
            "messages": messages(request, self.name if thinks else ""),
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": dict(tool.parameters),
                }
                for tool in request.tools
            ]
        if config:
            body["thinking"] = config
        if thinks and thinking is not None and thinking.effort and "budget_tokens" not in config:
            body["output_config"] = {"effort": thinking.effort}
        temperature = request.temperature if request.temperature is not None else self.temperature
        if temperature is not None and not thinks:
            body["temperature"] = temperature
        top_p = request.top_p if request.top_p is not None else self.top_p
        if top_p is not None:
            body["top_p"] = top_p
        if stream:
            body["stream"] = True
        return body

    def thinking_config(self, thinking: Thinking | None) -> dict[str, Any]:
        """The ``thinking`` field for ``thinking`` on this model (empty: none sent)."""
        if thinking is None:
            return {}
        if not thinking.enabled:
            return {"type": "disabled"}
        if thinking.budget_tokens is None and self.rules.thinks_adaptively(self.model_name):
            return {"type": "adaptive"}
        budget = STYLE.budget_for(thinking.budget_tokens, thinking.effort) or STYLE.min_budget
        return {"type": "enabled", "budget_tokens": budget}

    def _response(self, data: Any) -> ModelResponse:
        if not isinstance(data, dict):
            raise malformed(self.name, "the answer is not a JSON object")
        _raise_reported_error(self.name, data)
        content = data.get("content")
        if not isinstance(content, list):
            raise malformed(self.name, "the answer has no content list")
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[ToolCall] = []
        thoughts: list[dict[str, Any]] = []
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind in _THINKING_BLOCKS:
                thoughts.append(block)  # kept whole: the signature covers it
                if kind == "thinking":
                    reasoning.append(str(block.get("thinking", "")))
            elif kind == "text":
                text.append(str(block.get("text", "")))
            elif kind == "tool_use":
                if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                    raise malformed(self.name, "a tool_use block has no id or name")
                arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
                calls.append(ToolCall(block["id"], block["name"], arguments))
        return ModelResponse(
            text="".join(text),
            tool_calls=tuple(calls),
            reasoning="".join(reasoning),
            usage=_usage(data.get("usage")),
            finish_reason=_finish(data.get("stop_reason"), calls),
            model=self.name,
            replay=_replay(self.name, thoughts),
        )


def _replay(model: str, thoughts: list[dict[str, Any]]) -> Replay | None:
    return Replay(model, {"thinking": thoughts}) if thoughts else None


def _thoughts(message: Message, model: str) -> list[dict[str, Any]]:
    """The thinking blocks of an assistant step, when ``model`` wrote them."""
    replay = message.replay
    if replay is None or not model or replay.model != model:
        return []
    blocks = replay.fields.get("thinking")
    return list(blocks) if isinstance(blocks, list) else []


def _last_step_thought(request: ModelRequest, model: str) -> bool:
    """Whether the request may think: true unless the last assistant message called tools
    without a thinking block of ``model``. That holds even when a user's text follows
    (an earlier turn that ended on a question card): on the wire it joins the tool results,
    and the API still wants that step to start with its thinking."""
    for message in reversed(request.messages):
        if message.role == "assistant":
            return not message.tool_calls or bool(_thoughts(message, model))
    return True


def messages(request: ModelRequest, model: str = "") -> list[dict[str, Any]]:
    """The Messages API ``messages`` for ``request`` (the system prompt goes elsewhere).

    Consecutive messages of one role become one message: the API wants every tool result
    of a step in the user message right after the assistant's ``tool_use`` blocks, and a
    user's text that arrives after those results joins them. An assistant step starts
    with the thinking blocks ``model`` wrote for it, unchanged (none when ``model`` is
    empty: the API refuses thinking blocks in a request that does not think).
    """
    out: list[dict[str, Any]] = []
    for message in request.messages:
        blocks: list[dict[str, Any]] = []
        role = "assistant" if message.role == "assistant" else "user"
        if message.role == "assistant":
            blocks.extend(_thoughts(message, model))
        if message.role == "tool":
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
            if message.is_error:
                result["is_error"] = True
            blocks.append(result)
        elif message.role == "system" and message.content:
            # The API takes a system prompt only at the top: a layer's system message
            # among the others goes as the user's text, marked as the system's.
            blocks.append({"type": "text", "text": f"{SYSTEM_MARK}{message.content}"})
        elif message.content:  # the API refuses empty text blocks
            blocks.append({"type": "text", "text": message.content})
        if message.role == "assistant":
            blocks.extend(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": _input(call.arguments),
                }
                for call in message.tool_calls
            )
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _input(arguments: str) -> dict[str, Any]:
    """Tool-call arguments as the object ``tool_use.input`` must be.

    Arguments the model wrote as invalid JSON were answered with an error result; they
    are kept, wrapped, so the model can see what it wrote.
    """
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):
        return {"invalid_json": arguments}
    return value if isinstance(value, dict) else {"invalid_json": arguments}


@dataclass
class _PartialCall:
    ordinal: int
    id: str
    name: str
    start_input: str
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamState:
    """What the events of one stream have said so far."""

    model: str
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)  # by content block index
    thoughts: dict[int, dict[str, Any]] = field(default_factory=dict)  # by block index
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None
    stopped: bool = False

    def feed(self, name: str, data: Any) -> Iterator[StreamEvent]:
        """The stream events of one server-sent event, recording what it adds."""
        if not isinstance(data, dict):
            raise malformed(self.model, "a stream event is not a JSON object")
        kind = data.get("type", name)
        if kind == "message_start":
            message = data.get("message")
            if isinstance(message, dict):
                self._count(message.get("usage"))
        elif kind == "content_block_start":
            yield from self._start(data)
        elif kind == "content_block_delta":
            yield from self._delta(data)
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self.stop_reason = delta["stop_reason"]
            self._count(data.get("usage"))
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            _raise_reported_error(self.model, data)
        # ping, content_block_stop and event types added later carry nothing we need.

    def _start(self, data: Mapping[str, Any]) -> Iterator[StreamEvent]:
        block, index = data.get("content_block"), data.get("index")
        if not isinstance(block, dict) or not isinstance(index, int):
            raise malformed(self.model, "content_block_start without a block or an index")
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            self.text.append(str(block["text"]))
            yield TextDelta(str(block["text"]))
        elif kind in _THINKING_BLOCKS:
            self.thoughts[index] = dict(block)
            if kind == "thinking" and block.get("thinking"):
                self.reasoning.append(str(block["thinking"]))
                yield ReasoningDelta(str(block["thinking"]))
        elif kind == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise malformed(self.model, "a tool_use block has no id or name")
            partial = _PartialCall(
                ordinal=len(self.calls),
                id=block["id"],
                name=block["name"],
                start_input=json.dumps(block.get("input") or {}, ensure_ascii=False),
            )
            self.calls[index] = partial
            yield ToolCallDelta(partial.ordinal, partial.id, partial.name, "")

    def _delta(self, data: Mapping[str, Any]) -> Iterator[StreamEvent]:
        delta, index = data.get("delta"), data.get("index")
        if not isinstance(delta, dict):
            raise malformed(self.model, "content_block_delta without a delta")
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            self.text.append(delta["text"])
            yield TextDelta(delta["text"])
        elif kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            self._thought(index)["thinking"] = (
                self._thought(index).get("thinking", "") + delta["thinking"]
            )
            self.reasoning.append(delta["thinking"])
            yield ReasoningDelta(delta["thinking"])
        elif kind == "signature_delta" and isinstance(delta.get("signature"), str):
            thought = self._thought(index)
            thought["signature"] = thought.get("signature", "") + delta["signature"]
        elif kind == "input_json_delta":
            partial = self.calls.get(index) if isinstance(index, int) else None
            if partial is None:
                raise malformed(self.model, f"input_json_delta for block {index}, not a tool_use")
            fragment = str(delta.get("partial_json", ""))
            partial.arguments.append(fragment)
            yield ToolCallDelta(partial.ordinal, arguments=fragment)
        # Delta types added later carry nothing we need.

    def _thought(self, index: Any) -> dict[str, Any]:
        thought = self.thoughts.get(index) if isinstance(index, int) else None
        if thought is None:
            raise malformed(self.model, f"a thinking delta for block {index}, not a thinking block")
        return thought

    def _count(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        counted = _usage(usage)
        # message_start has the input count, message_delta the cumulative output count.
        if counted.input_tokens:  # a message_delta may say 0 for "not counted here"
            self.input_tokens = counted.input_tokens
        if "output_tokens" in usage:
            self.output_tokens = counted.output_tokens

    def response(self) -> ModelResponse:
        """The complete response, once ``message_stop`` arrived."""
        calls = [
            ToolCall(p.id, p.name, "".join(p.arguments) or p.start_input)
            for p in sorted(self.calls.values(), key=lambda p: p.ordinal)
        ]
        return ModelResponse(
            text="".join(self.text),
            tool_calls=tuple(calls),
            reasoning="".join(self.reasoning),
            usage=Usage(self.input_tokens, self.output_tokens),
            finish_reason=_finish(self.stop_reason, calls),
            model=self.model,
            replay=_replay(self.model, [self.thoughts[i] for i in sorted(self.thoughts)]),
        )


_INPUT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _usage(raw: Any) -> Usage:
    """Token counts; cached input counts as input (the API counts it apart)."""
    if not isinstance(raw, dict):
        return Usage()
    inputs = sum(raw[key] for key in _INPUT_KEYS if isinstance(raw.get(key), int))
    output = raw.get("output_tokens")
    return Usage(inputs, output if isinstance(output, int) else 0)


def _finish(stop_reason: Any, calls: list[ToolCall]) -> str:
    if isinstance(stop_reason, str):
        return _FINISH.get(stop_reason, stop_reason)
    return "tool_calls" if calls else "stop"


def _raise_reported_error(model: str, data: Mapping[str, Any]) -> None:
    """An ``error`` event mid-stream, or (rarely) an error body with status 200."""
    if data.get("type") != "error":
        return
    error = data.get("error")
    kind = str(error.get("type", "error")) if isinstance(error, dict) else "error"
    message = error.get("message", "") if isinstance(error, dict) else str(error)
    raise ModelError(
        model, f"the API reported {kind}: {message}", retryable=kind in _RETRYABLE_ERRORS
    )
