"""The resource tools at run time."""

from __future__ import annotations

from typing import Any

from buddy.runtime.state import RuntimeConversation
from buddy.runtime.tools import ToolResult


async def list_resources(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    files = c.resource.list()
    return ToolResult.of("\n".join(files) if files else "没有资料", details=files)


async def read_resource(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    return ToolResult.of(c.resource.read(p["file"]))
