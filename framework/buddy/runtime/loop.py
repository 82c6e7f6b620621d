"""The agent loop: model → tool calls → results → model … until a reply.

One turn answers one event. Tool calls of one model step run concurrently and their
results go back in the order the model asked. Every failure — invalid arguments, an
unknown tool, a denial, a body that raises or hangs, a hook that raises — is an error
result the model sees; a model failure ends the turn with a clear message for the user.

The turn is recorded step by step for the platform, with the data-visibility rule: once
user data was read, data-access results are kept as dataset statuses only, and every
later tool argument, tool result, step text and reasoning is redacted; the final reply
keeps its text but not its reasoning.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from buddy.errors import HookFailed, ModelError, PlatformError, ResourceNotFoundError, ToolError
from buddy.models.base import (
    Done,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    StreamRestart,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolDefinition,
)
from buddy.platform.limits import STEP_CONTENT_BYTES, STEP_CONTENT_DEPTH
from buddy.platform.protocol.values import step_content_refusal
from buddy.runtime.hooks import HookRunner, ToolCallInfo
from buddy.runtime.state import CURRENT_TURN, RuntimeConversation, install_log_redaction
from buddy.runtime.tools import Tool, ToolResult

if TYPE_CHECKING:
    from buddy.extend.turn import Injected

__all__ = [
    "DENIAL_PREFIX",
    "MAX_STEPS",
    "REDACTED",
    "AgentEvent",
    "AgentLoop",
    "TurnOutcome",
    "inject",
]

log = logging.getLogger("buddy.runtime.loop")

MAX_STEPS = 12
REDACTED = "[已隐去：这一轮读过用户授权数据，此处不保留]"

DENIAL_PREFIX = "调用被拒绝："  # how a hook's refusal reads to the model (and to scenario checks)
MODEL_FAILURE = "抱歉，我这边暂时连不上模型，稍后再试试吧。"
STEP_LIMIT = "（这一轮步骤太多，先停在这里。）"


def inject(messages: list[Message], injected: Sequence[Injected]) -> list[Message]:
    """``messages`` with each of ``injected`` ``depth`` messages from the end (0: after
    the last; deeper than ``messages``: at the start). Those of one depth and role are one
    message, their texts joined by a line, in the order given; at one depth, system
    messages go first, then user, then assistant."""
    if not injected:
        return messages
    joined: dict[tuple[int, str], list[str]] = {}
    for one in injected:
        joined.setdefault((min(max(one.depth, 0), len(messages)), one.role), []).append(one.text)
    roles: tuple[Literal["system", "user", "assistant"], ...] = ("system", "user", "assistant")
    out: list[Message] = []
    for at in range(len(messages) + 1):
        depth = len(messages) - at
        out.extend(
            Message(role, "\n".join(joined[depth, role]))
            for role in roles
            if (depth, role) in joined
        )
        if at < len(messages):
            out.append(messages[at])
    return out


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """An event of the loop's stream.

    ``type`` is one of ``agent_start``, ``turn_start``, ``message_start``,
    ``message_update``, ``message_end``, ``tool_execution_start``,
    ``tool_execution_update``, ``tool_execution_end``, ``turn_end``, ``agent_end``.
    """

    type: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class TurnOutcome:
    """What a turn produced.

    Attributes:
        reply: The text the user sees, or ``None``.
        steps: The record to persist (already redacted where needed).
        data_read: Whether the turn read user data.
        error: A model failure, when the turn could not finish.
        messages: The turn's messages for the history of later turns (redacted like
            ``steps``; the model saw the unredacted ones during the turn).
    """

    reply: str | None
    steps: list[dict[str, Any]]
    data_read: bool
    error: str | None = None
    messages: list[Message] = field(default_factory=list)


class _Recorder:
    """Builds the persisted steps, redacting everything after user data was read."""

    def __init__(self, conversation: RuntimeConversation, data_tools: frozenset[str]) -> None:
        self.conversation = conversation
        self.data_tools = data_tools  # tools whose results may carry user data
        self.steps: list[dict[str, Any]] = []
        self.messages: list[Message] = []

    @property
    def redacting(self) -> bool:
        return self.conversation.turn.data_read

    def model_step(self, response: ModelResponse, *, final: bool) -> None:
        text, reasoning = response.text, response.reasoning
        if reasoning:
            self.steps.append(
                {"type": "reasoning", "redacted": True}
                if self.redacting
                else {"type": "reasoning", "content": bounded(reasoning)}
            )
        keep_text = not self.redacting or final
        if text:
            self.steps.append(
                {"type": "text", "content": bounded(text)}
                if keep_text
                else {"type": "text", "redacted": True}
            )
        calls = tuple(
            ToolCall(c.id, c.name, c.arguments if not self.redacting else "{}")
            for c in response.tool_calls
        )
        for call in response.tool_calls:
            step: dict[str, Any] = {"type": "tool_call", "tool": call.name, "call_id": call.id}
            if self.redacting:
                step["redacted"] = True
            else:
                step["content"] = _arguments_for_record(call.arguments)
            self.steps.append(step)
        if text or calls:
            kept = REDACTED if self.redacting else reasoning
            self.messages.append(
                Message(
                    "assistant",
                    text if keep_text else REDACTED,
                    tool_calls=calls,
                    reasoning=kept if reasoning else "",
                )
            )

    def result(
        self, call: ToolCall, result: ToolResult, raw: ToolResult, *, read_here: bool, redact: bool
    ) -> None:
        step: dict[str, Any] = {"type": "tool_result", "tool": call.name, "call_id": call.id}
        if result.is_error:
            step["is_error"] = True
        if read_here and call.name in self.data_tools:
            content: Any = _statuses(raw)  # from the tool's own result, before any after hook
            step["content"] = content
            shown = json.dumps(content, ensure_ascii=False)
        elif redact or read_here:
            step["redacted"] = True
            shown = REDACTED
        else:
            step["content"] = bounded(result.text)
            shown = result.text
        self.steps.append(step)
        self.messages.append(
            Message("tool", shown, tool_call_id=call.id, name=call.name, is_error=result.is_error)
        )


def _arguments_for_record(arguments: str) -> Any:
    """The arguments as the record keeps them: parsed JSON, or (invalid, too deep, too
    big) their text, cut to what the platform stores."""
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return bounded(arguments)
    if _plainly_storable(arguments):
        return value
    return bounded(value, raw=arguments)


def _plainly_storable(raw: str) -> bool:
    """Whether JSON text this short and plain parses to a value within every limit, so
    the full check can be skipped (the usual tool arguments): its compact JSON is then at
    most a few times its length, it cannot nest deeper than its brackets, and it has no
    ``NaN``/``Infinity`` and no escape that could be a lone surrogate."""
    return (
        len(raw) <= _SHORT
        and raw.count("{") + raw.count("[") <= STEP_CONTENT_DEPTH
        and "NaN" not in raw
        and "Infinity" not in raw
        and "\\u" not in raw
        and (raw.isascii() or _unicode(raw))
    )


def bounded(value: Any, *, raw: str | None = None) -> Any:
    """``value`` as a step's ``content`` the platform takes and can serve back — by the
    platform's own rule (:func:`~buddy.platform.protocol.conversation.step_content_refusal`:
    at most :data:`~buddy.platform.limits.STEP_CONTENT_DEPTH` levels and
    :data:`~buddy.platform.limits.STEP_CONTENT_BYTES` of compact JSON, finite numbers,
    valid Unicode). Anything else is kept as text (``raw``, or the JSON of ``value``), cut
    to fit, with a note of how long it was — so a turn is always committed, whatever a
    model or a tool produced."""
    if isinstance(value, str) and len(value) <= _SHORT and (value.isascii() or _unicode(value)):
        return value  # the common case, under every limit at once: no encoding needed
    if step_content_refusal(0, value) is None:
        return value
    if raw is None:
        raw = value if isinstance(value, str) else _as_text(value)
    return _cut(raw)


# A string this short is within the byte limit even if every character were escaped.
_SHORT = STEP_CONTENT_BYTES // 8


def _unicode(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _as_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError):
        return "[a value too deep to keep]"


def _cut(text: str) -> str:
    """``text`` made storable: lone surrogates replaced, and cut (with a note) so its JSON
    stays under the byte limit even where every character needs escaping."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    if step_content_refusal(0, text) is None:
        return text
    note = f"…[cut: {len(text)} characters in all]"
    return text[: (STEP_CONTENT_BYTES - 2) // 6 - len(note)] + note


def _statuses(result: ToolResult) -> dict[str, str]:
    """Only ``dataset → status`` of a data-access result (never the values)."""
    details = result.details
    items = details if isinstance(details, list) else [details]
    statuses: dict[str, str] = {}
    for item in items:
        if isinstance(item, dict) and "status" in item:
            statuses[str(item.get("dataset", "result"))] = str(item["status"])
    return statuses


class AgentLoop:
    """Runs turns of one buddy: its model, tools and hooks.

    Args:
        model: The model (with its retries and fallbacks). Sampling settings and
            ``thinking`` are each model's own (:func:`buddy.models.registry.resolve`
            builds every model of the chain with its own manifest settings), so the loop's
            requests carry none: a fallback never gets the main model's settings.
        tools: The tools by name.
        hooks: The hook rules.
        max_steps: Model requests per turn before it is stopped.
    """

    def __init__(
        self,
        model: Model,
        tools: dict[str, Tool],
        hooks: HookRunner,
        *,
        max_steps: int = MAX_STEPS,
    ) -> None:
        self.model = model
        self.tools = tools
        self.hooks = hooks
        self.max_steps = max_steps
        self.definitions = tuple(
            ToolDefinition(t.name, t.description, t.parameters) for t in tools.values()
        )
        self.data_tools = frozenset(name for name, tool in tools.items() if tool.reads_data)
        install_log_redaction()

    async def run(
        self,
        system: str,
        history: list[Message],
        user: Message,
        conversation: RuntimeConversation,
        on_event: Callable[[AgentEvent], None] | None = None,
        injected: Sequence[Injected] = (),
    ) -> TurnOutcome:
        """Run one turn for ``user`` (the new message) after ``history``, with the
        layers' ``injected`` messages in what the model reads (not in the outcome)."""
        token = CURRENT_TURN.set(conversation.turn)
        try:
            return await self._run(
                system, inject([*history, user], injected), user, conversation, on_event
            )
        finally:
            CURRENT_TURN.reset(token)

    async def _run(
        self,
        system: str,
        messages: list[Message],
        user: Message,
        conversation: RuntimeConversation,
        on_event: Callable[[AgentEvent], None] | None,
    ) -> TurnOutcome:
        emit = on_event or (lambda event: None)
        recorder = _Recorder(conversation, self.data_tools)
        emit(AgentEvent("agent_start"))
        reply: str | None = None
        error: str | None = None
        for step in range(self.max_steps):
            emit(AgentEvent("turn_start", {"step": step}))
            try:
                response = await self._ask(system, messages, emit)
            except ModelError as exc:
                log.warning("model failed: %s", exc)
                error = str(exc)
                reply = MODEL_FAILURE
                break
            except Exception as exc:  # a broken model implementation must not kill the conversation
                log.exception("model raised")
                error = f"{type(exc).__name__}: {exc}"
                reply = MODEL_FAILURE
                break
            final = not response.tool_calls
            recorder.model_step(response, final=final)
            # The model keeps seeing everything within the turn; only the record and the
            # history kept for later turns are redacted. What the provider needs back from
            # this step (its reasoning, signed thinking) stays for the rest of the turn.
            messages.append(
                Message(
                    "assistant",
                    response.text,
                    tool_calls=response.tool_calls,
                    reasoning=response.reasoning,
                    replay=response.replay,
                )
            )
            if final:
                reply = response.text or None
                emit(AgentEvent("turn_end", {"step": step}))
                break
            results = await self._run_calls(response.tool_calls, conversation, recorder, emit)
            messages.extend(results)
            emit(AgentEvent("turn_end", {"step": step}))
            if conversation.turn.ended:
                reply = response.text or None
                break
        else:
            reply = STEP_LIMIT
        emit(AgentEvent("agent_end", {"reply": reply, "error": error}))
        return TurnOutcome(
            reply=reply,
            steps=recorder.steps,
            data_read=conversation.turn.data_read,
            error=error,
            messages=[user, *recorder.messages],
        )

    async def _ask(
        self, system: str, messages: list[Message], emit: Callable[[AgentEvent], None]
    ) -> ModelResponse:
        request = ModelRequest(system=system, messages=tuple(messages), tools=self.definitions)
        emit(AgentEvent("message_start"))
        response: ModelResponse | None = None
        async for event in self.model.stream(request):
            if isinstance(event, TextDelta):
                emit(AgentEvent("message_update", {"text": event.text}))
            elif isinstance(event, ReasoningDelta):
                emit(AgentEvent("message_update", {"reasoning": event.text}))
            elif isinstance(event, ToolCallDelta):
                emit(AgentEvent("message_update", {"tool_call": event.index}))
            elif isinstance(event, StreamRestart):  # a retry: what streamed so far is void
                emit(AgentEvent("message_start", {"restart": event.reason}))
            elif isinstance(event, Done):
                response = event.response
        if response is None:
            raise ModelError(self.model.name, "the stream ended without a response", retryable=True)
        emit(AgentEvent("message_end", {"text": response.text, "calls": len(response.tool_calls)}))
        return response

    async def _run_calls(
        self,
        calls: tuple[ToolCall, ...],
        conversation: RuntimeConversation,
        recorder: _Recorder,
        emit: Callable[[AgentEvent], None],
    ) -> list[Message]:
        redact = conversation.turn.data_read  # results after an earlier read are redacted

        async def one(call: ToolCall) -> tuple[ToolCall, ToolResult, ToolResult, bool]:
            was_read = conversation.turn.data_read
            emit(AgentEvent("tool_execution_start", {"id": call.id, "name": call.name}))
            result, raw = await self._execute(call, conversation)
            read_here = not was_read and conversation.turn.data_read
            emit(
                AgentEvent(
                    "tool_execution_end",
                    {"id": call.id, "name": call.name, "is_error": result.is_error},
                )
            )
            return call, result, raw, read_here

        if len(calls) == 1:  # the common case needs no task of its own
            outcomes = [await one(calls[0])]
        else:
            outcomes = await asyncio.gather(*(one(call) for call in calls))
        live: list[Message] = []
        for call, result, raw, read_here in outcomes:
            recorder.result(call, result, raw, read_here=read_here, redact=redact)
            live.append(
                Message(
                    "tool",
                    result.text,
                    tool_call_id=call.id,
                    name=call.name,
                    is_error=result.is_error,
                )
            )
        return live

    async def _execute(
        self, call: ToolCall, conversation: RuntimeConversation
    ) -> tuple[ToolResult, ToolResult]:
        """The result the model sees, and the tool's own result before after hooks."""
        tool = self.tools.get(call.name)
        if tool is None:
            known = "、".join(self.tools) or "无"
            failed = ToolResult.of(f"没有这个工具：{call.name}（可用：{known}）", is_error=True)
            return failed, failed
        try:
            params = json.loads(call.arguments or "{}")
        except ValueError as exc:
            failed = ToolResult.of(f"参数不是合法的 JSON：{exc}", is_error=True)
            return failed, failed
        except RecursionError:
            failed = ToolResult.of("参数嵌套太深，读不了：请换一种写法", is_error=True)
            return failed, failed
        problem = tool.validate(params)
        if problem is not None:
            failed = ToolResult.of(problem, is_error=True)
            return failed, failed
        info = ToolCallInfo(call.id, call.name, params, tool.label)
        try:
            denied = await self.hooks.before(info, conversation)
        except HookFailed as exc:
            failed = ToolResult.of(f"调用前的检查出错，没有执行：{exc}", is_error=True)
            return failed, failed
        if denied is not None:
            failed = ToolResult.of(f"{DENIAL_PREFIX}{denied}", is_error=True)
            return failed, failed
        try:
            async with asyncio.timeout(tool.timeout):  # no extra task, unlike wait_for
                result = await tool.execute(call.id, params, conversation)
        except TimeoutError:
            result = ToolResult.of(
                f"工具 {call.name} 超时（{tool.timeout:g} 秒）没有完成", is_error=True
            )
        except (ToolError, ResourceNotFoundError) as exc:
            result = ToolResult.of(str(exc), is_error=True)
        except PlatformError as exc:
            result = ToolResult.of(f"平台拒绝了请求：{exc.reason}", is_error=True)
        except Exception as exc:  # a tool body's bug must not end the turn
            log.exception("tool %s failed", call.name)
            result = ToolResult.of(f"工具出错：{type(exc).__name__}: {exc}", is_error=True)
        try:
            return await self.hooks.after(info, result, conversation), result
        except HookFailed as exc:
            return ToolResult.of(f"调用后的处理出错：{exc}", is_error=True), result
