"""The platform tools a manifest lists by name: descriptions and parameter schemas.

Texts follow the TypeScript runtime's contract (SPEC §4). Widget tools describe each
widget type's modules and fields, so the model needs no extra instructions about shapes.
The runtime binds each spec to the conversation's platform client.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from buddy.capabilities import DATA_ACCESS_CAPABILITIES
from buddy.compile.blueprint import ToolSpec, WidgetType
from buddy.manifest.schema import PLATFORM_TOOL_NAMES, SUBSCRIPTION_KEY_PATTERN
from buddy.platform.limits import (
    ASK_OPTION_CHARS,
    ASK_OPTIONS_MAX,
    ASK_OPTIONS_MIN,
    ASK_QUESTION_CHARS,
    CALENDAR_DAYS_DEFAULT,
    CALENDAR_DAYS_MAX,
    CALENDAR_DAYS_MIN,
    COOLDOWN_MAX,
    DAILY_LIMIT_MAX,
    DAILY_LIMIT_MIN,
    INTERVAL_MAX,
    INTERVAL_MIN,
    QUERY_DATASETS_MAX,
    REQUEST_REASON_CHARS,
    SUBSCRIPTION_REASON_CHARS,
    SUBSCRIPTION_TITLE_CHARS,
    WIDGET_TITLE_CHARS,
)

__all__ = ["ENDS_TURN", "covers_every_platform_tool", "platform_tools"]

ENDS_TURN = frozenset({"ask_question", "data_access_request"})

_STR = {"type": "string"}


def _obj(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


def _dataset_list() -> str:
    return "\n".join(
        f"- {c.id}（{c.title}）：{c.description}；字段 {', '.join(c.item_fields)}"
        for c in DATA_ACCESS_CAPABILITIES.values()
    )


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


def _widget_catalogue(widgets: tuple[WidgetType, ...]) -> str:
    if not widgets:
        return "这只搭子没有声明小挂件类型。"
    lines = ["可用的小挂件类型："]
    for widget in widgets:
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


_FAILURE = (
    "平台请求失败时只会看到「平台请求失败（HTTP 状态码），请查询最新状态后再操作」，照做即可。"
)


def _widget_ids(widgets: tuple[WidgetType, ...]) -> dict[str, Any]:
    return {"type": "string", "enum": [w.type for w in widgets]} if widgets else dict(_STR)


def _declared(subscriptions: tuple[tuple[str, str], ...]) -> str:
    if not subscriptions:
        return "这只搭子没有预先声明的订阅。"
    lines = "；".join(f"{key}（{title}）" for key, title in subscriptions)
    return f"这只搭子预先声明的订阅只需给 key，其余字段按声明：{lines}。"


def _specs(
    widgets: tuple[WidgetType, ...], subscriptions: tuple[tuple[str, str], ...] = ()
) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """name → (label, description, parameters)."""
    declared = _declared(subscriptions)
    datasets = {"type": "string", "enum": list(DATA_ACCESS_CAPABILITIES)}
    catalogue = _widget_catalogue(widgets)
    widget_id = {"widget_id": {"type": "string", "description": "小挂件 id"}}
    module = {"module": {"type": "string", "description": "模块名"}}
    record_id = {
        "record_id": {"type": "string", "minLength": 1, "description": "记录 id，自己取，稳定即可"}
    }
    trigger = {
        "oneOf": [
            {"type": "string", "enum": ["workout.completed", "sleep.ready"]},
            _obj({"type": {"const": "data.updated"}, "dataset": datasets}, ("type",)),
            _obj(
                {
                    "type": {"const": "schedule"},
                    "at": {
                        "type": "string",
                        "format": "date-time",
                        "description": "首次时刻，带时区偏移",
                    },
                    "interval_minutes": {
                        "type": "integer",
                        "minimum": INTERVAL_MIN,
                        "maximum": INTERVAL_MAX,
                    },
                },
                ("type", "at"),
            ),
        ]
    }
    quiet = _obj(
        {
            "start": {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
            "end": {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
            "timezone": {"type": "string", "description": "IANA 时区，如 Asia/Shanghai"},
        }
    )
    key = {"type": "string", "pattern": SUBSCRIPTION_KEY_PATTERN}
    return {
        "resource_list": (
            "正在翻资料",
            "列出这只搭子随身带的全部资料的路径（相对 resources/，按路径排序）。没有资料时回「没有资料」。",
            _obj({}),
        ),
        "resource_read": (
            "正在读资料",
            "按 resource_list 给的路径原样读一篇资料的正文。",
            _obj(
                {
                    "file": {
                        "type": "string",
                        "minLength": 1,
                        "description": "resource_list 给的路径",
                    }
                },
                ("file",),
            ),
        ),
        "ask_question": (
            "正在出题",
            "发一张题卡请用户选：一个问题加 2～4 个可以直接点的选项。题目和选项只写在参数里，回复正文里不再说一遍。"
            "题卡发出，这一轮就结束，等用户操作；用户点选项等于用选项原文发一条消息。这一轮读过用户授权数据之后不能再发题卡。",
            _obj(
                {
                    "question": {"type": "string", "minLength": 1, "maxLength": ASK_QUESTION_CHARS},
                    "options": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1, "maxLength": ASK_OPTION_CHARS},
                        "minItems": ASK_OPTIONS_MIN,
                        "maxItems": ASK_OPTIONS_MAX,
                        "uniqueItems": True,
                    },
                },
                ("question", "options"),
            ),
        ),
        "data_access_query": (
            "正在查数据",
            "查询用户授权给这只搭子的数据，每个 Dataset 各自一个状态：available（带 data.items）、notGranted（未授权或用途变了要重新确认）、"
            "notDeclared（没声明）、disabledInGroup（这位成员在群里关掉了）、unavailable（还没有数据或已过期）。一次最多 8 个；"
            "群聊必须传 member_id（群消息开头 [名字 #m_…] 里的 m_…）。查到的数据只在这一轮可见：想让结论以后还在，就在回复里说出来，"
            "不要写进记忆、题卡、小挂件或别的工具参数。可查的 Dataset：\n" + _dataset_list(),
            _obj(
                {
                    "datasets": {
                        "type": "array",
                        "items": datasets,
                        "minItems": 1,
                        "maxItems": QUERY_DATASETS_MAX,
                        "uniqueItems": True,
                    },
                    "member_id": {
                        "type": "string",
                        "pattern": "^m_",
                        "description": "群聊必传：要查的成员",
                    },
                },
                ("datasets",),
            ),
        ),
        "data_access_request": (
            "正在申请授权",
            "在私聊里发一张数据授权卡，kind 取 healthkit（需 datasets）、location 或 calendar（可带 calendar_days，1～31，默认 7）。"
            "发卡后这一轮结束，等用户操作；用户处理后会开启新回合。HealthKit 授权后再用 data_access_query 查；位置和日历用 "
            "data_access_read_result 读一次性结果。群聊里不能发，要引导成员去私聊。用户拒绝后不要在同一任务里反复申请。",
            _obj(
                {
                    "kind": {"type": "string", "enum": ["healthkit", "location", "calendar"]},
                    "reason": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": REQUEST_REASON_CHARS,
                        "description": "用户看到的申请理由",
                    },
                    "datasets": {
                        "type": "array",
                        "items": datasets,
                        "minItems": 1,
                        "maxItems": QUERY_DATASETS_MAX,
                        "uniqueItems": True,
                    },
                    "calendar_days": {
                        "type": "integer",
                        "minimum": CALENDAR_DAYS_MIN,
                        "maximum": CALENDAR_DAYS_MAX,
                        "default": CALENDAR_DAYS_DEFAULT,
                    },
                },
                ("kind", "reason"),
            ),
        ),
        "data_access_read_result": (
            "正在读授权结果",
            "按授权卡的 request_id 读一次性的位置或日历结果：available 带 data，过期或读不到时 unavailable。HealthKit 不走这个工具。",
            _obj({"request_id": {"type": "string", "minLength": 1}}, ("request_id",)),
        ),
        "widget_create": (
            "正在建小挂件",
            "新建一个小挂件，回 {id}。" + catalogue,
            _obj(
                {
                    "type": _widget_ids(widgets),
                    "title": {"type": "string", "minLength": 1, "maxLength": WIDGET_TITLE_CHARS},
                },
                ("type", "title"),
            ),
        ),
        "widget_read": (
            "正在看小挂件",
            "读整个小挂件，含各模块的记录和每条记录的 revision。" + _FAILURE,
            _obj(widget_id, ("widget_id",)),
        ),
        "widget_read_module": (
            "正在看小挂件",
            "读小挂件的一个模块，回 {records}。" + _FAILURE,
            _obj({**widget_id, **module}, ("widget_id", "module")),
        ),
        "widget_rename": (
            "正在改标题",
            "改小挂件标题，id 不变，聊天里发过的卡片跟着显示新标题。" + _FAILURE,
            _obj(
                {
                    **widget_id,
                    "title": {"type": "string", "minLength": 1, "maxLength": WIDGET_TITLE_CHARS},
                },
                ("widget_id", "title"),
            ),
        ),
        "widget_write_record": (
            "正在写小挂件",
            "写一条记录，已存在就整条覆盖，回 {revision}；带 expected_revision 时版本号对不上会失败，先读最新再写。"
            "data 要符合模块的记录字段。" + _FAILURE + "\n" + catalogue,
            _obj(
                {
                    **widget_id,
                    **module,
                    **record_id,
                    "data": {"type": "object", "description": "整条记录"},
                    "expected_revision": {"type": "integer", "minimum": 0},
                },
                ("widget_id", "module", "record_id", "data"),
            ),
        ),
        "widget_delete_record": (
            "正在删记录",
            "删小挂件里的一条记录。" + _FAILURE,
            _obj({**widget_id, **module, **record_id}, ("widget_id", "module", "record_id")),
        ),
        "widget_delete": (
            "正在删小挂件",
            "删整个小挂件连记录；聊天里发过的卡片留着，点开显示已删除。" + _FAILURE,
            _obj(widget_id, ("widget_id",)),
        ),
        "widget_send": (
            "正在发小挂件",
            "把小挂件发进聊天：放进发送队列就返回，不等平台确认送达；同一次调用重试只落一条。"
            + _FAILURE,
            _obj(widget_id, ("widget_id",)),
        ),
        "proactive_subscribe": (
            "正在订阅主动服务",
            "按稳定 key 创建或更新一条主动服务订阅（相同 key 更新并重新启用），只在私聊可用，最多 20 条 active。"
            "trigger 取 workout.completed、sleep.ready、{type: data.updated, dataset?} 或 {type: schedule, at, interval_minutes?}（60～525600 分钟，固定间隔）。"
            "quiet_hours 缺省 22:30～08:00 Asia/Shanghai；cooldown_minutes 缺省 120（0～10080）；daily_limit 缺省 3（1～20）。"
            "新订阅要给 title、reason、trigger；" + declared,
            _obj(
                {
                    "key": key,
                    "title": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": SUBSCRIPTION_TITLE_CHARS,
                    },
                    "reason": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": SUBSCRIPTION_REASON_CHARS,
                    },
                    "trigger": trigger,
                    "quiet_hours": quiet,
                    "cooldown_minutes": {"type": "integer", "minimum": 0, "maximum": COOLDOWN_MAX},
                    "daily_limit": {
                        "type": "integer",
                        "minimum": DAILY_LIMIT_MIN,
                        "maximum": DAILY_LIMIT_MAX,
                    },
                },
                ("key",),
            ),
        ),
        "proactive_list": (
            "正在查订阅",
            "列出这场会话的全部主动服务订阅，包括已关闭的。",
            _obj({}),
        ),
        "proactive_unsubscribe": (
            "正在关闭订阅",
            "按 key 关闭一条订阅，回是否找到；尚未完成的主动服务会一并取消。",
            _obj({"key": key}, ("key",)),
        ),
        "proactive_unsubscribe_all": (
            "正在关闭订阅",
            "关闭全部 active 订阅，回关掉几条。",
            _obj({}),
        ),
    }


def platform_tools(
    names: list[str],
    widgets: tuple[WidgetType, ...],
    subscriptions: tuple[tuple[str, str], ...] = (),
) -> dict[str, ToolSpec]:
    """The specs of the platform tools ``names`` for a buddy with these widget types and
    declared subscriptions (``(key, title)``; the model may subscribe them by key alone).

    Raises:
        KeyError: A name is not a platform tool.
    """
    specs = _specs(widgets, subscriptions)
    out: dict[str, ToolSpec] = {}
    for name in names:
        label, description, parameters = specs[name]
        out[name] = ToolSpec(
            name=name,
            kind="platform",
            description=description,
            parameters=parameters,
            label=label,
            ends_turn=name in ENDS_TURN,
        )
    return out


def covers_every_platform_tool() -> bool:
    """Whether this table describes exactly the tools the manifest schema accepts."""
    return set(_specs(())) == set(PLATFORM_TOOL_NAMES)
