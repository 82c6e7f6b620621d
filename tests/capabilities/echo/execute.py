"""The echo tool at run time."""

from __future__ import annotations

from typing import Any

from buddy.runtime.state import RuntimeConversation
from buddy.runtime.tools import ToolResult


async def say(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    return ToolResult.of(f"回声：{p['text']}")
