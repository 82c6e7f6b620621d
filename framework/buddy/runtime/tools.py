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
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import cache, partial
from typing import Any

from buddy.compile.blueprint import Blueprint, ToolSpec
from buddy.compile.persona import make_environment
from buddy.runtime.plugins import load_handler
from buddy.runtime.state import RuntimeConversation

__all__ = [
    "CHECKED_FORMATS",
    "DEFAULT_TOOL_TIMEOUT",
    "Tool",
    "ToolResult",
    "build_tools",
    "json_result",
    "result_of",
]

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


#: The ``format`` values checked in tool arguments, each with an example the model reads
#: when a value is not of it. Any other format is an annotation only (as JSON Schema
#: allows); a fixed list, so what is checked does not depend on optional packages.
CHECKED_FORMATS = {
    "date": "2026-12-03",
    "date-time": "2026-12-03T08:00:00+08:00",
    "time": "08:30:00+08:00",
    "email": "name@example.com",
    "idn-email": "小明@example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "regex": "^[0-9]+$",
}

# RFC 3339 (what JSON Schema's date-time and time are): ``T`` and ``Z`` in either case,
# seconds required, an offset required.
_TIME = r"([01]\d|2[0-3]):([0-5]\d):([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)"
_DATE_TIME = re.compile(rf"(\d{{4}}-\d{{2}}-\d{{2}})[Tt]{_TIME}", re.ASCII)
_FULL_TIME = re.compile(_TIME, re.ASCII)


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True  # a format applies to strings only
    matched = _DATE_TIME.fullmatch(value)
    if matched is None:
        return False
    try:
        date.fromisoformat(matched[1])
    except ValueError:
        return False
    return True


def _is_time(value: object) -> bool:
    return not isinstance(value, str) or _FULL_TIME.fullmatch(value) is not None


@cache
def _format_checker() -> Any:
    """The checker of :data:`CHECKED_FORMATS`, made once (jsonschema is imported late)."""
    import jsonschema

    checker = jsonschema.FormatChecker(
        [f for f in CHECKED_FORMATS if f not in ("date-time", "time")]
    )
    checker.checks("date-time")(_is_date_time)
    checker.checks("time")(_is_time)
    return checker


def _problem(error: Any) -> str:
    """One argument problem for the model; a format one in Chinese, with an example."""
    where = "/".join(str(p) for p in error.path) or "(参数)"
    if error.validator == "format" and error.validator_value in CHECKED_FORMATS:
        shown = json.dumps(error.instance, ensure_ascii=False)
        example = CHECKED_FORMATS[error.validator_value]
        return f"参数不符合要求：{where}: {shown} 不是 {error.validator_value} 格式（如 {example}）"
    return f"参数不符合要求：{where}: {error.message}"


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
    reads_data: bool = False
    _validator: Any = field(default=None, repr=False)

    def validate(self, params: Any) -> str | None:
        """Why ``params`` do not match the parameter schema, or ``None``."""
        if self._validator is None:
            import jsonschema  # ~50 ms to import: paid on the first call, not at start-up

            self._validator = jsonschema.Draft202012Validator(
                dict(self.parameters), format_checker=_format_checker()
            )
        if self._validator.is_valid(params):
            return None
        errors = sorted(self._validator.iter_errors(params), key=lambda e: list(e.path))
        return _problem(errors[0])


def json_result(value: Any) -> ToolResult:
    """A result whose text is ``value`` as JSON (and whose details are ``value``)."""
    return ToolResult.of(json.dumps(value, ensure_ascii=False), details=value)


# ---------------------------------------------------------------- platform tools


def _platform(reference: str) -> Execute:
    """A platform tool's body, its capability's ``execute`` (``module:function``, in the
    compiled spec), imported on the first call: a start from the compiled-buddy cache
    needs neither the registry nor the capabilities' run-time code."""
    function: Execute | None = None

    async def execute(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
        nonlocal function
        if function is None:
            from buddy.extend import resolve

            function = resolve(reference)
        return await function(call_id, p, c)

    return execute


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
    """A declarative tool: its templates rendered with the arguments, then its kind's
    ``execute`` (a capability's ``Uses``, imported on the first call); the ``reply``
    template answers unless the kind answered itself."""
    templates = dict(spec.templates)
    function: Callable[..., Any] | None = None

    async def execute(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
        nonlocal function
        if function is None:
            from buddy.extend import resolve

            function = resolve(spec.execute)
        rendered = {f: _render(t, p) for f, t in templates.items() if f != "reply"}
        if "reply" in templates:
            rendered["reply"] = templates["reply"]  # rendered after the kind ran, if used
        answered: ToolResult | None = await function(rendered, c)
        if answered is not None:
            return answered
        return ToolResult.of(_render(templates["reply"], p))

    return execute


def build_tools(blueprint: Blueprint) -> dict[str, Tool]:
    """The runtime tools of a compiled buddy, in the manifest's order."""
    tools: dict[str, Tool] = {}
    for spec in blueprint.tools:
        if spec.kind == "platform":
            execute = _platform(spec.execute)
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
            reads_data=spec.reads_data,
        )
    return tools
