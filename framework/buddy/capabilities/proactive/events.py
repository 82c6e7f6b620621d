"""The proactive event's turn: a subscription fired, nobody asked.

The model reads the subscription's title, reason and trigger as the turn's message, and
the manifest's proactive prompt with the skip rule: a turn with nothing worth saying
answers only :data:`SKIP_MARKER`, and the user sees nothing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from buddy.capabilities.proactive.compiled import declared

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["SKIP_MARKER", "SKIP_RULE", "prompt", "user_message"]

#: What a proactive turn answers to say nothing.
SKIP_MARKER = "[[skip]]"
SKIP_RULE = f"\n\n如果现在不需要开口，只输出 {SKIP_MARKER}（不要输出别的），用户什么也不会看到。"


def user_message(payload: dict[str, Any]) -> str:
    """The turn's message: which subscription fired, why, and on what."""
    trigger = json.dumps(payload.get("trigger"), ensure_ascii=False)
    return f"[主动服务触发] {payload.get('title')}：{payload.get('reason')}（触发：{trigger}）"


def prompt(blueprint: Blueprint) -> str:
    """The system prompt's part for this turn: the manifest's proactive prompt, the skip rule."""
    return f"\n\n## 主动服务\n{declared(blueprint).prompt}{SKIP_RULE}"
