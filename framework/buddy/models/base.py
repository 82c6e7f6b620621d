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
    "ReasoningDelta",
    "StreamEvent",
    "TextDelta",
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
class Message:
    """One message of the conversation history sent to a model.

    Attributes:
        role: ``user``, ``assistant`` or ``tool`` (the system prompt is separate).
        content: Text (for ``tool``: the result text the model reads).
        tool_calls: For ``assistant``: the calls it made.
        tool_call_id: For ``tool``: the call this result answers.
        name: For ``tool``: the tool's name.
        is_error: For ``tool``: whether the result is an error.
    """

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model sees it."""

    name: str
    description: str
    parameters: Mapping[str, Any]


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
    """

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None


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
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    model: str = ""


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
class Done:
    """The end of a stream, with the complete response."""

    response: ModelResponse


StreamEvent = TextDelta | ReasoningDelta | ToolCallDelta | Done


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
