"""The user-data tools the model sees; the datasets listed from the catalogue, the
bounds from the platform's limits."""

from __future__ import annotations

from typing import Any

from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.capabilities.data.limits import (
    CALENDAR_DAYS_DEFAULT,
    CALENDAR_DAYS_MAX,
    CALENDAR_DAYS_MIN,
    QUERY_DATASETS_MAX,
    REQUEST_REASON_CHARS,
)
from buddy.extend import PlatformTool, obj

_RUN = "buddy.capabilities.data.execute"


def _dataset_list() -> str:
    return "\n".join(
        f"- {c.id}（{c.title}）：{c.description}；字段 {', '.join(c.item_fields)}"
        for c in DATA_ACCESS_CAPABILITIES.values()
    )


def _datasets() -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "string", "enum": list(DATA_ACCESS_CAPABILITIES)},
        "minItems": 1,
        "maxItems": QUERY_DATASETS_MAX,
        "uniqueItems": True,
    }


TOOLS = (
    PlatformTool(
        "data_access_query",
        "正在查数据",
        "查询用户授权给这只搭子的数据，每个 Dataset 各自一个状态：available（带 data.items）、notGranted（未授权或用途变了要重新确认）、"
        "notDeclared（没声明）、disabledInGroup（这位成员在群里关掉了）、unavailable（还没有数据或已过期）。一次最多 8 个；"
        "群聊必须传 member_id（群消息开头 [名字 #m_…] 里的 m_…）。查到的数据只在这一轮可见：想让结论以后还在，就在回复里说出来，"
        "不要写进记忆、题卡、小挂件或别的工具参数。可查的 Dataset：\n" + _dataset_list(),
        obj(
            {
                "datasets": _datasets(),
                "member_id": {
                    "type": "string",
                    "pattern": "^m_",
                    "description": "群聊必传：要查的成员",
                },
            },
            ("datasets",),
        ),
        f"{_RUN}:query",
        reads_data=True,
    ),
    PlatformTool(
        "data_access_request",
        "正在申请授权",
        "在私聊里发一张数据授权卡，kind 取 healthkit（需 datasets）、location 或 calendar（可带 calendar_days，1～31，默认 7）。"
        "发卡后这一轮结束，等用户操作；用户处理后会开启新回合。HealthKit 授权后再用 data_access_query 查；位置和日历用 "
        "data_access_read_result 读一次性结果。群聊里不能发，要引导成员去私聊。用户拒绝后不要在同一任务里反复申请。",
        obj(
            {
                "kind": {"type": "string", "enum": ["healthkit", "location", "calendar"]},
                "reason": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": REQUEST_REASON_CHARS,
                    "description": "用户看到的申请理由",
                },
                "datasets": _datasets(),
                "calendar_days": {
                    "type": "integer",
                    "minimum": CALENDAR_DAYS_MIN,
                    "maximum": CALENDAR_DAYS_MAX,
                    "default": CALENDAR_DAYS_DEFAULT,
                },
            },
            ("kind", "reason"),
        ),
        f"{_RUN}:request",
        ends_turn=True,
    ),
    PlatformTool(
        "data_access_read_result",
        "正在读授权结果",
        "按授权卡的 request_id 读一次性的位置或日历结果：available 带 data，过期或读不到时 unavailable。HealthKit 不走这个工具。",
        obj({"request_id": {"type": "string", "minLength": 1}}, ("request_id",)),
        f"{_RUN}:read_result",
        reads_data=True,
    ),
)
