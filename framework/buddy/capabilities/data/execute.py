"""The user-data tools at run time (the data-visibility rule is the conversation's:
``runtime/state.py`` marks the turn when data was read, and a consent card ends it)."""

from __future__ import annotations

from typing import Any

from buddy.runtime.state import RuntimeConversation
from buddy.runtime.tools import ToolResult, json_result


async def query(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    return json_result(await c.data_access.query(list(p["datasets"]), p.get("member_id")))


async def request(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    sent = await c.data_access.request(
        p["kind"],
        p["reason"],
        idempotency_key=call_id,
        datasets=p.get("datasets"),
        calendar_days=p.get("calendar_days"),
    )  # ends the turn (runtime/state.py), as from any tool's code
    return ToolResult.of("授权卡已发出，这一轮到此结束，等对方处理。", details=sent)


async def read_result(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    return json_result(await c.data_access.read_result(p["request_id"]))
