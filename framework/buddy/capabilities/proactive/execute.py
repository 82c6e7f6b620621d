"""The proactive-service tools at run time."""

from __future__ import annotations

from typing import Any

from buddy.runtime.state import RuntimeConversation
from buddy.runtime.tools import ToolResult, json_result


async def subscribe(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    request = {k: v for k, v in p.items() if k != "key"}
    return json_result(await c.proactive.subscribe(p["key"], request))


async def list_subscriptions(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    return json_result(await c.proactive.list())


async def unsubscribe(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    return json_result({"found": await c.proactive.unsubscribe(p["key"])})


async def unsubscribe_all(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    return json_result({"closed": await c.proactive.unsubscribe_all()})
