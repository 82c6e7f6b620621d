"""The proactive-service tools the model sees, their bounds from the platform's limits."""

from __future__ import annotations

from typing import Any

from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.capabilities.proactive.limits import (
    COOLDOWN_MAX,
    DAILY_LIMIT_MAX,
    DAILY_LIMIT_MIN,
    INTERVAL_MAX,
    INTERVAL_MIN,
    SUBSCRIPTION_KEY_PATTERN,
    SUBSCRIPTION_REASON_CHARS,
    SUBSCRIPTION_TITLE_CHARS,
)
from buddy.extend import PlatformTool, ToolContext, obj

_RUN = "buddy.capabilities.proactive.execute"
_TIME = {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"}
_KEY = {"type": "string", "pattern": SUBSCRIPTION_KEY_PATTERN}


def _declared(context: ToolContext) -> str:
    spec = context.sections.get("proactive")  # this capability's compiled section
    subscriptions = spec.subscriptions if spec is not None else ()
    if not subscriptions:
        return "这只搭子没有预先声明的订阅。"
    lines = "；".join(f"{s.key}（{s.title}）" for s in subscriptions)
    return f"这只搭子预先声明的订阅只需给 key，其余字段按声明：{lines}。"


def _trigger() -> dict[str, Any]:
    dataset = {"type": "string", "enum": list(DATA_ACCESS_CAPABILITIES)}
    return {
        "oneOf": [
            {"type": "string", "enum": ["workout.completed", "sleep.ready"]},
            obj({"type": {"const": "data.updated"}, "dataset": dataset}, ("type",)),
            obj(
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


TOOLS = (
    PlatformTool(
        "proactive_subscribe",
        "正在订阅主动服务",
        lambda context: (
            "按稳定 key 创建或更新一条主动服务订阅（相同 key 更新并重新启用），只在私聊可用，最多 20 条 active。"
            "trigger 取 workout.completed、sleep.ready、{type: data.updated, dataset?} 或 {type: schedule, at, interval_minutes?}（60～525600 分钟，固定间隔）。"
            "quiet_hours 缺省 22:30～08:00 Asia/Shanghai；cooldown_minutes 缺省 120（0～10080）；daily_limit 缺省 3（1～20）。"
            "新订阅要给 title、reason、trigger；" + _declared(context)
        ),
        obj(
            {
                "key": _KEY,
                "title": {"type": "string", "minLength": 1, "maxLength": SUBSCRIPTION_TITLE_CHARS},
                "reason": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": SUBSCRIPTION_REASON_CHARS,
                },
                "trigger": _trigger(),
                "quiet_hours": obj(
                    {
                        "start": _TIME,
                        "end": _TIME,
                        "timezone": {
                            "type": "string",
                            "description": "IANA 时区，如 Asia/Shanghai",
                        },
                    }
                ),
                "cooldown_minutes": {"type": "integer", "minimum": 0, "maximum": COOLDOWN_MAX},
                "daily_limit": {
                    "type": "integer",
                    "minimum": DAILY_LIMIT_MIN,
                    "maximum": DAILY_LIMIT_MAX,
                },
            },
            ("key",),
        ),
        f"{_RUN}:subscribe",
    ),
    PlatformTool(
        "proactive_list",
        "正在查订阅",
        "列出这场会话的全部主动服务订阅，包括已关闭的。",
        obj({}),
        f"{_RUN}:list_subscriptions",
    ),
    PlatformTool(
        "proactive_unsubscribe",
        "正在关闭订阅",
        "按 key 关闭一条订阅，回是否找到；尚未完成的主动服务会一并取消。",
        obj({"key": _KEY}, ("key",)),
        f"{_RUN}:unsubscribe",
    ),
    PlatformTool(
        "proactive_unsubscribe_all",
        "正在关闭订阅",
        "关闭全部 active 订阅，回关掉几条。",
        obj({}),
        f"{_RUN}:unsubscribe_all",
    ),
)
