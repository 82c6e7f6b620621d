"""Tools at run time: one contract for platform, custom and declarative tools.

Mirrors the TypeScript runtime's ``AgentTool``: a name, label, description, JSON Schema
parameters and an async ``execute(call_id, params, conversation)`` returning content
(text blocks) plus details. Every failure becomes an error result the model reads; the
turn never crashes on a tool.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from buddy.compile.blueprint import Blueprint, ToolSpec
from buddy.compile.persona import make_environment
from buddy.errors import PlatformError, ToolError
from buddy.runtime.plugins import load_handler
from buddy.runtime.state import DATA_READ_REFUSAL, RuntimeConversation

__all__ = ["DEFAULT_TOOL_TIMEOUT", "Tool", "ToolResult", "build_tools", "result_of"]

DEFAULT_TOOL_TIMEOUT = 60.0

Execute = Callable[[str, dict[str, Any], RuntimeConversation], Awaitable["ToolResult"]]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool answers: text blocks for the model, details for code, and the error flag."""

    content: tuple[dict[str, Any], ...]
    details: Any = None
    is_error: bool = False

    @property
    def text(self) -> str:
        """The text blocks joined."""
        return "\n".join(str(block.get("text", "")) for block in self.content)

    @classmethod
    def of(cls, text: str, *, details: Any = None, is_error: bool = False) -> ToolResult:
        """A result of one text block."""
        return cls(({"type": "text", "text": text},), details, is_error)


def result_of(value: Any) -> ToolResult:
    """Turn what a plugin returned into a :class:`ToolResult` (text, or JSON of anything else)."""
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult.of("完成。")
    if isinstance(value, str):
        return ToolResult.of(value)
    try:
        return ToolResult.of(json.dumps(value, ensure_ascii=False, default=str), details=value)
    except (TypeError, ValueError):
        return ToolResult.of(str(value), details=value)


@dataclass
class Tool:
    """A tool the model can call."""

    name: str
    label: str
    description: str
    parameters: Mapping[str, Any]
    execute: Execute
    kind: str = "platform"
    ends_turn: bool = False
    timeout: float = DEFAULT_TOOL_TIMEOUT
    _validator: Any = field(default=None, repr=False)

    def validate(self, params: Any) -> str | None:
        """Why ``params`` do not match the parameter schema, or ``None``."""
        if self._validator is None:
            import jsonschema  # ~50 ms to import: paid on the first call, not at start-up

            self._validator = jsonschema.Draft202012Validator(dict(self.parameters))
        if self._validator.is_valid(params):
            return None
        errors = sorted(self._validator.iter_errors(params), key=lambda e: list(e.path))
        first = errors[0]
        where = "/".join(str(p) for p in first.path) or "(参数)"
        return f"参数不符合要求：{where}: {first.message}"


def _json(value: Any) -> ToolResult:
    return ToolResult.of(json.dumps(value, ensure_ascii=False), details=value)


# ---------------------------------------------------------------- platform tools


def _widget_failure(exc: PlatformError) -> ToolResult:
    # The model gets the status only (SPEC §4): the reason may leak internals.
    return ToolResult.of(
        f"平台请求失败（HTTP {exc.status}），请查询最新状态后再操作", is_error=True
    )


async def _resource_list(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    files = c.resource.list()
    return ToolResult.of("\n".join(files) if files else "没有资料", details=files)


async def _resource_read(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    return ToolResult.of(c.resource.read(p["file"]))


async def _ask_question(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    if c.turn.data_read:
        raise ToolError(DATA_READ_REFUSAL.format(what="发题卡"))
    if len(set(p["options"])) != len(p["options"]):
        raise ToolError("选项不能重复")
    c.turn.question = {"question": p["question"], "options": list(p["options"])}
    c.turn.ended = True
    return ToolResult.of("题卡已发出，等对方选择。", details=c.turn.question)


async def _data_query(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    results = await c.data_access.query(list(p["datasets"]), p.get("member_id"))
    return _json(results)


async def _data_request(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    sent = await c.data_access.request(
        p["kind"],
        p["reason"],
        idempotency_key=call_id,
        datasets=p.get("datasets"),
        calendar_days=p.get("calendar_days"),
    )  # ends the turn (runtime/state.py), as from any tool's code
    return ToolResult.of("授权卡已发出，这一轮到此结束，等对方处理。", details=sent)


async def _data_read_result(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    return _json(await c.data_access.read_result(p["request_id"]))


def _widget(operation: Callable[..., Awaitable[Any]]) -> Execute:
    async def execute(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
        try:
            return _json(await operation(call_id, p, c) or {"ok": True})
        except PlatformError as exc:
            return _widget_failure(exc)

    return execute


_PLATFORM: dict[str, Execute] = {
    "resource_list": _resource_list,
    "resource_read": _resource_read,
    "ask_question": _ask_question,
    "data_access_query": _data_query,
    "data_access_request": _data_request,
    "data_access_read_result": _data_read_result,
    "widget_create": _widget(
        lambda i, p, c: c.widget.create(p["type"], p["title"], idempotency_key=i)
    ),
    "widget_read": _widget(lambda i, p, c: c.widget.read(p["widget_id"])),
    "widget_read_module": _widget(
        lambda i, p, c: c.widget.read_module(p["widget_id"], p["module"])
    ),
    "widget_rename": _widget(lambda i, p, c: c.widget.rename(p["widget_id"], p["title"])),
    "widget_write_record": _widget(
        lambda i, p, c: c.widget.write_record(
            p["widget_id"],
            p["module"],
            p["record_id"],
            p["data"],
            expected_revision=p.get("expected_revision"),
        )
    ),
    "widget_delete_record": _widget(
        lambda i, p, c: c.widget.delete_record(p["widget_id"], p["module"], p["record_id"])
    ),
    "widget_delete": _widget(lambda i, p, c: c.widget.delete(p["widget_id"])),
    "widget_send": _widget(lambda i, p, c: c.widget.send(p["widget_id"], idempotency_key=i)),
    "proactive_subscribe": lambda i, p, c: _subscribe(p, c),
    "proactive_list": lambda i, p, c: _listed(c),
    "proactive_unsubscribe": lambda i, p, c: _unsubscribe(p, c),
    "proactive_unsubscribe_all": lambda i, p, c: _unsubscribe_all(c),
}


async def _subscribe(p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    request = {k: v for k, v in p.items() if k != "key"}
    return _json(await c.proactive.subscribe(p["key"], request))


async def _listed(c: RuntimeConversation) -> ToolResult:
    return _json(await c.proactive.list())


async def _unsubscribe(p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    return _json({"found": await c.proactive.unsubscribe(p["key"])})


async def _unsubscribe_all(c: RuntimeConversation) -> ToolResult:
    return _json({"closed": await c.proactive.unsubscribe_all()})


# ---------------------------------------------------------------- custom and declarative tools


def _custom(spec: ToolSpec) -> Execute:
    assert spec.handler is not None
    ref = spec.handler
    function: Callable[..., Any] | None = None

    async def execute(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
        nonlocal function
        if function is None:
            function = load_handler(ref)
        if inspect.iscoroutinefunction(function):
            value = await function(c, p)
        else:
            # A sync body runs on a worker thread, so it cannot stall other conversations.
            value = await asyncio.to_thread(partial(function, c, p))
            if inspect.isawaitable(value):
                value = await value
        return result_of(value)

    return execute


_templates = make_environment([])


def _render(template: str, params: Mapping[str, Any]) -> str:
    return _templates.from_string(template).render(dict(params))


def _declarative(spec: ToolSpec) -> Execute:
    templates = dict(spec.templates)

    async def execute(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
        if spec.uses == "memory.write":
            await c.memory.write(_render(templates["key"], p), _render(templates["text"], p))
        elif spec.uses == "memory.delete":
            await c.memory.delete(_render(templates["key"], p))
        else:
            prefix = _render(templates["prefix"], p) if "prefix" in templates else ""
            entries = [e for e in await c.memory.list() if str(e["key"]).startswith(prefix)]
            if "reply" not in templates:
                return _json([{"key": e["key"], "text": e["text"]} for e in entries])
        return ToolResult.of(_render(templates["reply"], p))

    return execute


def build_tools(blueprint: Blueprint) -> dict[str, Tool]:
    """The runtime tools of a compiled buddy, in the manifest's order."""
    tools: dict[str, Tool] = {}
    for spec in blueprint.tools:
        if spec.kind == "platform":
            execute = _PLATFORM[spec.name]
        elif spec.kind == "custom":
            execute = _custom(spec)
        else:
            execute = _declarative(spec)
        tools[spec.name] = Tool(
            name=spec.name,
            label=spec.label,
            description=spec.description,
            parameters=spec.parameters,
            execute=execute,
            kind=spec.kind,
            ends_turn=spec.ends_turn,
            timeout=spec.timeout_seconds or DEFAULT_TOOL_TIMEOUT,
        )
    return tools
