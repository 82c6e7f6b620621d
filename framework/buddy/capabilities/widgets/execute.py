"""The widget tools at run time. A platform failure reaches the model as its status only
(SPEC §4: the reason may leak internals); a record the runtime refused for its module's
schema reaches it with the runtime's own reason (the field and the rule, in Chinese)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from buddy.capabilities.widgets.conversation import RecordRefused
from buddy.errors import PlatformError
from buddy.runtime.state import RuntimeConversation
from buddy.runtime.tools import ToolResult, json_result

Operation = Callable[[str, dict[str, Any], RuntimeConversation], Awaitable[Any]]


def _failure(exc: PlatformError) -> ToolResult:
    return ToolResult.of(
        f"平台请求失败（HTTP {exc.status}），请查询最新状态后再操作", is_error=True
    )


def _tool(operation: Operation) -> Callable[..., Awaitable[ToolResult]]:
    async def execute(call_id: str, p: dict[str, Any], c: RuntimeConversation) -> ToolResult:
        try:
            return json_result(await operation(call_id, p, c) or {"ok": True})
        except RecordRefused as exc:  # its reason is ours: say what to fix
            return ToolResult.of(exc.reason, is_error=True)
        except PlatformError as exc:
            return _failure(exc)

    return execute


create = _tool(lambda i, p, c: c.widget.create(p["type"], p["title"], idempotency_key=i))
read = _tool(lambda i, p, c: c.widget.read(p["widget_id"]))
read_module = _tool(lambda i, p, c: c.widget.read_module(p["widget_id"], p["module"]))
rename = _tool(lambda i, p, c: c.widget.rename(p["widget_id"], p["title"]))
write_record = _tool(
    lambda i, p, c: c.widget.write_record(
        p["widget_id"],
        p["module"],
        p["record_id"],
        p["data"],
        expected_revision=p.get("expected_revision"),
    )
)
delete_record = _tool(
    lambda i, p, c: c.widget.delete_record(p["widget_id"], p["module"], p["record_id"])
)
delete = _tool(lambda i, p, c: c.widget.delete(p["widget_id"]))
send = _tool(lambda i, p, c: c.widget.send(p["widget_id"], idempotency_key=i))
