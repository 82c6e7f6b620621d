"""The question-card tool the model sees, its bounds from the platform's limits."""

from __future__ import annotations

from buddy.capabilities.questions.limits import (
    ASK_OPTION_CHARS,
    ASK_OPTIONS_MAX,
    ASK_OPTIONS_MIN,
    ASK_QUESTION_CHARS,
)
from buddy.extend import PlatformTool, obj

TOOLS = (
    PlatformTool(
        "ask_question",
        "正在出题",
        "发一张题卡请用户选：一个问题加 2～4 个可以直接点的选项。题目和选项只写在参数里，回复正文里不再说一遍。"
        "题卡发出，这一轮就结束，等用户操作；用户点选项等于用选项原文发一条消息。这一轮读过用户授权数据之后不能再发题卡。",
        obj(
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
        "buddy.capabilities.questions.execute:ask_question",
        ends_turn=True,
    ),
)
