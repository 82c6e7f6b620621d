"""Models that need no network: ``test`` (scripted, for tests) and ``offline`` (for trying
a buddy by hand without any API key)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from buddy.models.base import Model, ModelRequest, ModelResponse, ToolCall, Usage

__all__ = ["FunctionModel", "OfflineModel", "Reply", "TestModel", "call"]

_ids = itertools.count(1)


def _call_id() -> str:
    return f"call_{next(_ids)}"


def call(name: str, arguments: object | None = None, *, raw: str | None = None) -> ToolCall:
    """A scripted tool call; ``raw`` sends arguments text as-is (e.g. invalid JSON)."""
    text = raw if raw is not None else json.dumps(arguments or {}, ensure_ascii=False)
    return ToolCall(_call_id(), name, text)


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted model step: text, tool calls, reasoning, or all of them."""

    text: str = ""
    calls: Sequence[ToolCall] = ()
    reasoning: str = ""


ScriptStep = str | ToolCall | Sequence[ToolCall] | Reply


def _reply(step: ScriptStep) -> Reply:
    if isinstance(step, Reply):
        return step
    if isinstance(step, str):
        return Reply(text=step)
    if isinstance(step, ToolCall):
        return Reply(calls=(step,))
    return Reply(calls=tuple(step))


class TestModel(Model):
    """Answers with scripted steps, one per request, in order.

    A step is a text, a :func:`call`, a list of calls (one model step calling several
    tools), or a :class:`Reply`. With no script it answers a fixed text, so a manifest's
    ``ci`` profile can name ``test`` and still run.

    Attributes:
        requests: Every request received, for assertions.
    """

    __test__ = False  # not a pytest test class
    name = "test:test"

    def __init__(
        self, steps: Iterable[ScriptStep] | None = None, *, default: str = "(test model reply)"
    ) -> None:
        self.steps = [_reply(s) for s in steps] if steps is not None else None
        self.default = default
        self.position = 0
        self.requests: list[ModelRequest] = []

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.steps is None:
            return ModelResponse(text=self.default, model=self.name, usage=Usage(10, 5))
        if self.position >= len(self.steps):
            raise AssertionError(
                f"the test model was asked for step {self.position + 1} but has {len(self.steps)}"
            )
        step = self.steps[self.position]
        self.position += 1
        return ModelResponse(
            text=step.text,
            tool_calls=tuple(step.calls),
            reasoning=step.reasoning,
            usage=Usage(10, 5),
            finish_reason="tool_calls" if step.calls else "stop",
            model=self.name,
        )

    def assert_complete(self) -> None:
        """Fail unless every scripted step was used."""
        if self.steps is not None and self.position != len(self.steps):
            raise AssertionError(f"the test model used {self.position} of {len(self.steps)} steps")


class FunctionModel(Model):
    """Answers by calling ``function(request)`` — a model written as a Python function."""

    name = "test:function"

    def __init__(
        self, function: Callable[[ModelRequest], ModelResponse | Awaitable[ModelResponse]]
    ) -> None:
        self.function = function

    async def request(self, request: ModelRequest) -> ModelResponse:
        result = self.function(request)
        if isinstance(result, ModelResponse):
            return result
        return await result


@dataclass
class OfflineModel(Model):
    """For trying a buddy with no API key: echoes, clearly labelled, and calls tools on request.

    ``/call TOOL {json}`` as the user's message makes it call that tool with those
    arguments; it then reports the result. Anything else is echoed back.
    """

    name: str = "offline:offline"
    label: str = "[离线模型]"
    calls: list[ToolCall] = field(default_factory=list)

    async def request(self, request: ModelRequest) -> ModelResponse:
        last = request.messages[-1] if request.messages else None
        if last is not None and last.role == "tool":
            outcome = "出错了" if last.is_error else "的结果"
            return ModelResponse(
                text=f"{self.label} 工具 {last.name} {outcome}：\n{last.content}", model=self.name
            )
        text = last.content if last is not None else ""
        # In a group the runtime prefixes the sender: look past the prefix.
        head, sep, rest = text.partition("] ")
        body = rest if sep and text.startswith("[") and " #m_" in head else text
        if body.startswith("/call "):
            name, _, arguments = body[len("/call ") :].strip().partition(" ")
            tool = ToolCall(_call_id(), name, arguments.strip() or "{}")
            self.calls.append(tool)
            return ModelResponse(tool_calls=(tool,), finish_reason="tool_calls", model=self.name)
        return ModelResponse(
            text=f"{self.label} 你说的是：{body}\n（没有接真实模型；用 /call 工具名 {{json}} 可以调用工具）",
            model=self.name,
        )
