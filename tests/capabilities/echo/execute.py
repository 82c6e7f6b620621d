"""The echo tool at run time."""

from __future__ import annotations

from typing import Any

from buddy.runtime.state import RuntimeConversation
from buddy.runtime.tools import ToolResult
from tests.capabilities.echo.conversation import Echo


async def say(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    echo = c.parts["echo"]
    assert isinstance(echo, Echo)
    settings = echo.settings
    return ToolResult.of(" ".join(f"{settings.prefix}{p['text']}" for _ in range(settings.times)))
