"""The question-card tool at run time."""

from __future__ import annotations

from typing import Any

from buddy.errors import ToolError
from buddy.runtime.state import DATA_READ_REFUSAL, RuntimeConversation
from buddy.runtime.tools import ToolResult


async def ask_question(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
    if c.turn.data_read:
        raise ToolError(DATA_READ_REFUSAL.format(what="发题卡"))
    if len(set(p["options"])) != len(p["options"]):
        raise ToolError("选项不能重复")
    c.turn.question = {"question": p["question"], "options": list(p["options"])}
    c.turn.ended = True
    return ToolResult.of("题卡已发出，等对方选择。", details=c.turn.question)
