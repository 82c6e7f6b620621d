"""The model interface: what the agent loop asks of any model, and what it gets back.

Provider-neutral: the OpenAI-compatible and Anthropic implementations translate these
to and from their wire formats; the scripted ``test`` model and the ``offline`` model
implement them in-process.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Done",
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelSpec",
    "ReasoningDelta",
    "Replay",
    "StreamEvent",
    "StreamRestart",
    "TextDelta",
    "Thinking",
    "ToolCall",
    "ToolCallDelta",
    "ToolDefinition",
    "Usage",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for.

    Attributes:
        id: The call id (the provider's, or made up when it gives none).
        name: The tool name.
        arguments: The arguments as the model wrote them: JSON text, possibly invalid —
            the agent loop validates it and answers the model with an error if it is not.
    """

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Replay:
    """What a provider needs back with an assistant step in the later requests of a turn.

    Reasoning models refuse a tool turn whose earlier steps lost their reasoning: DeepSeek
    and Kimi want each tool-calling step's ``reasoning_content`` again, Anthropic its
    ``thinking`` blocks with their signatures, unchanged. The provider that answered puts
    those fields here exactly as it got them; the agent loop keeps them on the step's
    :class:`Message` for the rest of the turn (never in the history of later turns); the
    provider asked next writes back what its own rules name.

    Attributes:
        model: ``provider:name`` of the model that produced the fields (signed fields go
            back only to it).
        fields: The provider's own fields, as received.
    """

    model: str
    fields: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Message:
    """One message of the conversation history sent to a model.

    Attributes:
        role: ``user``, ``assistant`` or ``tool`` (the system prompt is separate); or
            ``system``, for a message a layer put into one turn's history
            (:class:`~buddy.extend.turn.Injected`), never kept.
        content: Text (for ``tool``: the result text the model reads).
        tool_calls: For ``assistant``: the calls it made.
        tool_call_id: For ``tool``: the call this result answers.
        name: For ``tool``: the tool's name.
        is_error: For ``tool``: whether the result is an error.
        reasoning: For ``assistant``: the step's reasoning as recorded (redacted where
            the record is), for providers that want it back in later turns.
        replay: For ``assistant``, within its turn: what its provider needs back.
    """

    role: Literal["user", "assistant", "tool", "system"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    reasoning: str = ""
    replay: Replay | None = None


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model sees it."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Thinking:
    """The manifest's ``model.thinking``: whether the model thinks first, and how much.

    Provider-neutral; each provider's row says how its API takes it
    (:data:`buddy.models.providers.THINKING_STYLES`), and ``buddy validate`` warns where
    a provider cannot take a part of it.

    Attributes:
        enabled: Thinking on (``True``) or off (``False``).
        budget_tokens: Tokens it may think for, or ``None`` for the provider's default.
        effort: ``low``, ``medium`` or ``high``, or ``None``.
    """

    enabled: bool = True
    budget_tokens: int | None = None
    effort: str | None = None


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request to a model.

    Attributes:
        system: The system prompt.
        messages: The history, oldest first.
        tools: The tools it may call.
        temperature: Sampling temperature, or ``None`` for the model's default.
        max_tokens: Output limit, or ``None``.
        top_p: Nucleus sampling, or ``None``.
        thinking: Thinking settings, or ``None`` for the model's default.
    """

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    thinking: Thinking | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one request."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What a model answered.

    Attributes:
        text: The reply text (may be empty when it only calls tools).
        tool_calls: Tool calls, in the order the model wrote them.
        reasoning: Reasoning text some models return separately (never shown to users).
        usage: Token counts.
        finish_reason: Why it stopped (``stop``, ``tool_calls``, ``length`` …).
        model: The model that answered (``provider:name``), after any fallback.
        replay: What the provider needs back with this step later in the turn, if anything.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    model: str = ""
    replay: Replay | None = None


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of reply text, streamed."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of reasoning text, streamed."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call, streamed: arguments arrive in fragments by ``index``."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class StreamRestart:
    """The stream failed part-way and starts again: drop every delta received so far.

    Sent by :class:`~buddy.models.resilience.RetryingModel` before a retry, and by
    :class:`~buddy.models.resilience.FallbackModel` before the next model answers.
    Nothing reaches a user before the turn is committed, so a restart is safe; whoever
    shows deltas live (the playground's preview) starts its preview again.

    Attributes:
        reason: Why: the error of the failed attempt.
    """

    reason: str


@dataclass(frozen=True, slots=True)
class Done:
    """The end of a stream, with the complete response."""

    response: ModelResponse


StreamEvent = TextDelta | ReasoningDelta | ToolCallDelta | StreamRestart | Done


class Model(abc.ABC):
    """A language model behind one interface.

    Implementations raise :class:`buddy.errors.ModelError` for failures (after their own
    retries); a malformed or cut stream is such an error, never a hang.
    """

    #: ``provider:name`` of the model.
    name: str = "model"

    @abc.abstractmethod
    async def request(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` in one piece."""

    async def aclose(self) -> None:
        """Release resources (HTTP clients); the default has none."""
        return

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Answer ``request`` as a stream; the last event is :class:`Done`.

        The default streams nothing until the whole response is there.
        """
        response = await self.request(request)
        if response.text:
            yield TextDelta(response.text)
        yield Done(response)


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A resolved model: provider preset plus the manifest's options.

    Attributes:
        provider: Provider id, e.g. ``moonshot``.
        name: The provider's model name, e.g. ``kimi-k3``.
        api: Wire format: ``openai``, ``anthropic`` or ``local``.
        base_url: Endpoint (the preset's unless the manifest overrides it).
        api_key_env: Environment variable holding the key; empty when none is needed.
        temperature: Sampling temperature, or ``None`` for the provider's default.
        max_tokens: Output limit, or ``None``.
        top_p: Nucleus sampling, or ``None``.
        fallbacks: Models tried in order after this one keeps failing.
        thinking: The manifest's ``thinking``, or ``None`` for the model's default.
    """

    provider: str
    name: str
    api: str
    base_url: str
    api_key_env: str
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    fallbacks: tuple[ModelSpec, ...] = ()
    thinking: Thinking | None = None

    @property
    def ref(self) -> str:
        """``provider:name``."""
        return f"{self.provider}:{self.name}"
