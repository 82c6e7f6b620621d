"""The models of a scenario's buddy: the scripted responses a step writes (or a real model
in their place), recording every tool call and result the step produced; and the
conversation layers' scripted model (:class:`LayerScript`)."""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from buddy.errors import ModelError
from buddy.manifest.yamlio import YamlPath
from buddy.models.base import (
    Done,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolDefinition,
    Usage,
)
from buddy.testing.expectations import CallSeen, ResultSeen
from buddy.testing.scenario_models import PLACEHOLDER, CallScript, ModelTurn, calls_of
from buddy.testing.scenario_results import StepError

__all__ = ["LayerScript", "ScenarioModel", "Scripted", "as_text", "scripted_responses"]


@dataclass(frozen=True, slots=True)
class Scripted:
    """A scripted response: where it is written, and its calls' arguments (unresolved)."""

    path: YamlPath
    text: str
    reasoning: str
    calls: tuple[CallScript, ...]


def scripted_responses(step_path: YamlPath, items: Sequence[str | ModelTurn]) -> list[Scripted]:
    out: list[Scripted] = []
    for index, turn in enumerate(items):
        path = (*step_path, "model", index)
        if isinstance(turn, str):
            out.append(Scripted(path, turn, "", ()))
            continue
        text = _skip_marker() if turn.skip else (turn.say or "")
        out.append(Scripted(path, text, turn.think or "", tuple(calls_of(turn, path))))
    return out


def _skip_marker() -> str:
    """What a model answers for "nothing worth saying" in a turn nobody asked for: the
    registered unasked event kinds' ``skip`` reply (the proactive turn's ``[[skip]]``)."""
    from buddy.extend import event_kinds

    return next((k.skip for k in event_kinds().values() if k.unasked and k.skip), "")


class ScenarioModel(Model):
    """The model a scenario's buddy talks to: the scripted responses, or a real model.

    It also records every tool call the model made and every result it read. Results are
    taken from each request's messages (what the model read, before any
    redaction); results of a call that ended the turn are taken from the stored record.
    """

    name = "test:scenario"

    def __init__(self, inner: Model | None) -> None:
        self.inner = inner
        if inner is not None:
            self.name = inner.name
        self.ids = itertools.count(1)
        self.seen: set[str] = set()
        self.latest: dict[str, str] = {}
        self.begin((), None, written=False)

    def begin(self, anchor: YamlPath, script: list[Scripted] | None, *, written: bool) -> None:
        """Start a step: its responses, and fresh lists of what it produced.

        Args:
            anchor: The key a script problem is reported at: the step's `model` when
                ``written``, else its action.
            script: The responses, or ``None`` for a real model.
            written: Whether the step has a ``model:`` list.
        """
        self.anchor = anchor
        self.script = script or []
        self.scripted = script is not None
        self.written = written
        self.used = 0
        self.asked = 0
        self.calls: list[CallSeen] = []
        self.results: list[ResultSeen] = []
        self.systems: list[str] = []  # the system prompt of each request, in order
        self.histories: list[tuple[Message, ...]] = []  # and its messages
        self.tools: list[tuple[ToolDefinition, ...]] = []  # and the tools it offered
        self.problems: list[tuple[YamlPath, str, bool]] = []  # (where, what, at the key)

    def absorb(self, messages: Sequence[Message]) -> None:
        """Record tool results not seen before."""
        for message in messages:
            if message.role != "tool" or message.tool_call_id is None:
                continue
            self.result(message.tool_call_id, str(message.name), message.content, message.is_error)

    def result(self, call_id: str, name: str, text: str | None, is_error: bool) -> None:
        """Record one tool result (once per call id)."""
        if call_id in self.seen:
            return
        self.seen.add(call_id)
        self.results.append(ResultSeen(call_id, name, text, is_error))
        if text is not None:
            self.latest[name] = text

    def _received(self, request: ModelRequest) -> None:
        self.systems.append(request.system)
        self.histories.append(request.messages)
        self.tools.append(request.tools)
        self.absorb(request.messages)

    def _responded(self, response: ModelResponse) -> None:
        for call in response.tool_calls:
            try:
                args: Any = json.loads(call.arguments or "{}")
            except ValueError:
                args = call.arguments
            self.calls.append(CallSeen(call.id, call.name, args))

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Answer with the next scripted response (or the real model's)."""
        self._received(request)
        if self.inner is not None:
            response = await self.inner.request(request)
        else:
            response = self._next()
        self._responded(response)
        return response

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Like :meth:`request`, streamed (a real model streams as usual)."""
        self._received(request)
        if self.inner is not None:
            async for event in self.inner.stream(request):
                if isinstance(event, Done):
                    self._responded(event.response)
                yield event
            return
        response = self._next()
        self._responded(response)
        if response.text:
            yield TextDelta(response.text)
        yield Done(response)

    def _next(self) -> ModelResponse:
        self.asked += 1
        if self.used >= len(self.script) or self.problems:
            if not self.problems:
                have = (
                    f"`model:` scripts {len(self.script)}"
                    if self.written
                    else "the step has no `model:`"
                )
                self.problems.append(
                    (
                        self.anchor,
                        f"the buddy asked the model for response {self.asked} of this step, but "
                        + have,
                        True,
                    )
                )
            raise ModelError(self.name, "no scripted response left")
        scripted = self.script[self.used]
        self.used += 1
        try:
            calls = tuple(
                ToolCall(
                    f"call_{next(self.ids)}",
                    call.tool,
                    json.dumps(self._resolve(call.args, call.args_at), ensure_ascii=False),
                )
                for call in scripted.calls
            )
        except StepError as exc:
            self.problems.append((exc.path, exc.message, False))
            raise ModelError(self.name, exc.message) from None
        return ModelResponse(
            text=scripted.text,
            tool_calls=calls,
            reasoning=scripted.reasoning,
            usage=Usage(10, 5),
            finish_reason="tool_calls" if calls else "stop",
            model=self.name,
        )

    def _resolve(self, value: Any, path: YamlPath) -> Any:
        if isinstance(value, str):
            whole = PLACEHOLDER.fullmatch(value.strip())
            if whole is not None:
                return self._lookup(whole, path)
            return PLACEHOLDER.sub(lambda m: as_text(self._lookup(m, path)), value)
        if isinstance(value, dict):
            return {k: self._resolve(v, (*path, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self._resolve(v, (*path, i)) for i, v in enumerate(value)]
        return value

    def _lookup(self, match: re.Match[str], path: YamlPath) -> Any:
        tool, dotted = match.group(1), match.group(2)
        text = self.latest.get(tool)
        if text is None:
            raise StepError(path, f"`{match.group(0)}`: {tool} has given no result yet")
        if not dotted:
            with contextlib.suppress(ValueError):
                return json.loads(text)
            return text
        try:
            value: Any = json.loads(text)
        except ValueError:
            raise StepError(
                path, f"`{match.group(0)}`: the result of {tool} is not JSON: {text[:120]!r}"
            ) from None
        for part in dotted.strip(".").split("."):
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                has = (
                    ", ".join(map(str, value)) if isinstance(value, dict) else type(value).__name__
                )
                raise StepError(
                    path,
                    f"`{match.group(0)}`: the result of {tool} has no `{part}` (it has: {has})",
                )
        return value

    def leftovers(self) -> None:
        """Note scripted responses the step did not use (unless the script failed already:
        then the rest going unused is only a consequence)."""
        if self.scripted and not self.problems and self.used < len(self.script):
            unused = self.script[self.used]
            self.problems.append(
                (
                    unused.path,
                    f"this step scripts {len(self.script)} model responses but the buddy asked "
                    f"for {self.asked}: this one and any after it were not used",
                    False,
                )
            )


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class LayerScript(Model):
    """The conversation layers' model in a scenario (automatic memory's extractor): it
    answers what the step scripted (``extract:``, pushed by the capability's step key),
    then ``{}`` — nothing found — so a scenario is deterministic and offline."""

    name = "test:layer-script"

    def __init__(self) -> None:
        self.answers: list[str] = []
        self.requests: list[ModelRequest] = []

    def push(self, answer: str) -> None:
        """What the next request is answered."""
        self.answers.append(answer)

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return ModelResponse(text=self.answers.pop(0) if self.answers else "{}", model=self.name)
