"""The resource tools the model sees."""

from __future__ import annotations

from buddy.extend import PlatformTool, obj

_RUN = "buddy.capabilities.resources.execute"

TOOLS = (
    PlatformTool(
        "resource_list",
        "正在翻资料",
        "列出这只搭子随身带的全部资料的路径（相对 resources/，按路径排序）。没有资料时回「没有资料」。",
        obj({}),
        f"{_RUN}:list_resources",
    ),
    PlatformTool(
        "resource_read",
        "正在读资料",
        "按 resource_list 给的路径原样读一篇资料的正文。",
        obj(
            {"file": {"type": "string", "minLength": 1, "description": "resource_list 给的路径"}},
            ("file",),
        ),
        f"{_RUN}:read_resource",
    ),
)
