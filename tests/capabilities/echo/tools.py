"""The echo tool's declaration: standard library only, like every capability's."""

from __future__ import annotations

from buddy.extend import PlatformTool, ToolContext, obj

ECHO_CHARS = 40  # the capability's own limit, used in its schema and its description
ECHOES_MAX = 3  # kept per conversation


def _description(context: ToolContext) -> str:
    return f"把一句话原样说回来（最多 {ECHO_CHARS} 字）。"


TOOLS = (
    PlatformTool(
        "echo_say",
        "正在回声",
        _description,
        obj({"text": {"type": "string", "minLength": 1, "maxLength": ECHO_CHARS}}, ("text",)),
        "tests.capabilities.echo.execute:say",
    ),
)
