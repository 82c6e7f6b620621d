"""The widget tools the model sees: each describes the buddy's widget types, modules and
record fields, so the model needs no other instructions about shapes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from buddy.capabilities.widgets.limits import WIDGET_TITLE_CHARS
from buddy.extend import PlatformTool, ToolContext, obj

if TYPE_CHECKING:
    from buddy.capabilities.widgets.compiled import WidgetType

_RUN = "buddy.capabilities.widgets.execute"
_FAILURE = (
    "记录不符合模块定义时会看到哪个字段、哪条规则，改好再调；"
    "平台请求失败时只会看到「平台请求失败（HTTP 状态码），请查询最新状态后再操作」，照做即可。"
)
_WIDGET_ID = {"widget_id": {"type": "string", "description": "小挂件 id"}}
_MODULE = {"module": {"type": "string", "description": "模块名"}}
_RECORD_ID = {
    "record_id": {"type": "string", "minLength": 1, "description": "记录 id，自己取，稳定即可"}
}
_TITLE = {"type": "string", "minLength": 1, "maxLength": WIDGET_TITLE_CHARS}


def _field_line(name: str, schema: Mapping[str, Any], required: bool) -> str:
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        kind = "|".join(str(k) for k in kind)
    extra = []
    if "enum" in schema:
        extra.append(
            "取值 " + " / ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
        )
    if "description" in schema:
        extra.append(str(schema["description"]))
    note = f"（{'；'.join(extra)}）" if extra else ""
    return f"{name}: {kind}{'，必填' if required else ''}{note}"


def _types(context: ToolContext) -> tuple[WidgetType, ...]:
    types: tuple[WidgetType, ...] = context.sections.get("widgets", ())
    return types


def catalogue(context: ToolContext) -> str:
    """The buddy's widget types, modules and record fields, as the model reads them."""
    types = _types(context)
    if not types:
        return "这只搭子没有声明小挂件类型。"
    lines = ["可用的小挂件类型："]
    for widget in types:
        lines.append(
            f"- {widget.type}（{widget.title}）"
            + (f"：{widget.description}" if widget.description else "")
        )
        for module in widget.modules:
            record = module.record
            props: Mapping[str, Any] = record.get("properties", {})
            required = set(record.get("required", []))
            fields = "；".join(_field_line(n, s, n in required) for n, s in props.items())
            lines.append(f"  - 模块 {module.name}（{module.title}）记录字段：{fields or '任意'}")
    return "\n".join(lines)


def _create_parameters(context: ToolContext) -> dict[str, Any]:
    types = _types(context)
    kind = {"type": "string", "enum": [w.type for w in types]} if types else {"type": "string"}
    return obj({"type": kind, "title": _TITLE}, ("type", "title"))


TOOLS = (
    PlatformTool(
        "widget_create",
        "正在建小挂件",
        lambda context: "新建一个小挂件，回 {id}。" + catalogue(context),
        _create_parameters,
        f"{_RUN}:create",
    ),
    PlatformTool(
        "widget_read",
        "正在看小挂件",
        "读整个小挂件，含各模块的记录和每条记录的 revision。" + _FAILURE,
        obj(_WIDGET_ID, ("widget_id",)),
        f"{_RUN}:read",
    ),
    PlatformTool(
        "widget_read_module",
        "正在看小挂件",
        "读小挂件的一个模块，回 {records}。" + _FAILURE,
        obj({**_WIDGET_ID, **_MODULE}, ("widget_id", "module")),
        f"{_RUN}:read_module",
    ),
    PlatformTool(
        "widget_rename",
        "正在改标题",
        "改小挂件标题，id 不变，聊天里发过的卡片跟着显示新标题。" + _FAILURE,
        obj({**_WIDGET_ID, "title": _TITLE}, ("widget_id", "title")),
        f"{_RUN}:rename",
    ),
    PlatformTool(
        "widget_write_record",
        "正在写小挂件",
        lambda context: (
            "写一条记录，已存在就整条覆盖，回 {revision}；带 expected_revision 时版本号对不上会失败，先读最新再写。"
            "data 要符合模块的记录字段。" + _FAILURE + "\n" + catalogue(context)
        ),
        obj(
            {
                **_WIDGET_ID,
                **_MODULE,
                **_RECORD_ID,
                "data": {"type": "object", "description": "整条记录"},
                "expected_revision": {"type": "integer", "minimum": 0},
            },
            ("widget_id", "module", "record_id", "data"),
        ),
        f"{_RUN}:write_record",
    ),
    PlatformTool(
        "widget_delete_record",
        "正在删记录",
        "删小挂件里的一条记录。" + _FAILURE,
        obj({**_WIDGET_ID, **_MODULE, **_RECORD_ID}, ("widget_id", "module", "record_id")),
        f"{_RUN}:delete_record",
    ),
    PlatformTool(
        "widget_delete",
        "正在删小挂件",
        "删整个小挂件连记录；聊天里发过的卡片留着，点开显示已删除。" + _FAILURE,
        obj(_WIDGET_ID, ("widget_id",)),
        f"{_RUN}:delete",
    ),
    PlatformTool(
        "widget_send",
        "正在发小挂件",
        "把小挂件发进聊天：放进发送队列就返回，不等平台确认送达；同一次调用重试只落一条。"
        + _FAILURE,
        obj(_WIDGET_ID, ("widget_id",)),
        f"{_RUN}:send",
    ),
)
