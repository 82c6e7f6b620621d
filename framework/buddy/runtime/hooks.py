"""``before_tool_call`` and ``after_tool_call`` rules at run time.

A before rule can refuse a call with a reason the model reads (it never rewrites the
arguments); an after rule can replace the result. A hook that raises does not crash the
turn: the call gets an error result.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from buddy.compile.blueprint import Blueprint, DenyHook, HandlerHook
from buddy.errors import HookFailed
from buddy.runtime.plugins import load_handler
from buddy.runtime.state import RuntimeConversation
from buddy.runtime.tools import ToolResult, result_of

__all__ = ["Deny", "HookRunner", "ToolCallInfo"]

log = logging.getLogger("buddy.runtime.hooks")


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    """The call a hook sees: ``id``, tool ``name``, validated ``arguments`` and ``label``."""

    id: str
    name: str
    arguments: dict[str, Any]
    label: str = ""


@dataclass(frozen=True, slots=True)
class Deny:
    """Returned by a before hook to refuse the call; ``reason`` is what the model reads."""

    reason: str


async def _call(function: Callable[..., Any], *args: Any) -> Any:
    value = function(*args)
    return await value if inspect.isawaitable(value) else value


class HookRunner:
    """The hook rules of a buddy, with their plugin functions loaded on first use."""

    def __init__(self, blueprint: Blueprint) -> None:
        self.before_rules = blueprint.before_hooks
        self.after_rules = blueprint.after_hooks
        self._loaded: dict[str, Callable[..., Any]] = {}

    def _function(self, hook: HandlerHook) -> Callable[..., Any]:
        key = hook.handler.reference
        if key not in self._loaded:
            self._loaded[key] = load_handler(hook.handler)
        return self._loaded[key]

    async def before(self, call: ToolCallInfo, conversation: RuntimeConversation) -> str | None:
        """The reason to refuse ``call``, or ``None`` to let it run.

        Raises:
            HookFailed: A handler raised.
        """
        for rule in self.before_rules:
            if isinstance(rule, DenyHook):
                if call.name in rule.tools and _applies(rule.when, conversation):
                    return rule.reason
                continue
            if rule.tools and call.name not in rule.tools:
                continue
            try:
                verdict = await _call(self._function(rule), call, conversation)
            except Exception as exc:
                log.exception("before_tool_call hook %s failed", rule.handler.reference)
                raise HookFailed(f"{rule.handler.reference}: {type(exc).__name__}: {exc}") from exc
            if isinstance(verdict, Deny):
                return verdict.reason
            if isinstance(verdict, str) and verdict:
                return verdict
            if isinstance(verdict, dict) and verdict.get("deny"):
                return str(verdict.get("reason") or verdict["deny"])
        return None

    async def after(
        self, call: ToolCallInfo, result: ToolResult, conversation: RuntimeConversation
    ) -> ToolResult:
        """The result after every after-hook had its say.

        Raises:
            HookFailed: A handler raised.
        """
        for rule in self.after_rules:
            if rule.tools and call.name not in rule.tools:
                continue
            try:
                replaced = await _call(self._function(rule), call, result, conversation)
            except Exception as exc:
                log.exception("after_tool_call hook %s failed", rule.handler.reference)
                raise HookFailed(f"{rule.handler.reference}: {type(exc).__name__}: {exc}") from exc
            if replaced is not None:
                result = result_of(replaced)
        return result


def _applies(when: str, conversation: RuntimeConversation) -> bool:
    if when == "always":
        return True
    if when == "proactive":
        return conversation.turn.unasked  # the manifest's word for an unasked turn
    return conversation.kind == when
