"""Python hooks for the running coach (``manifests/cardio``).

- :func:`guard` — a ``before_tool_call`` hook: no consent cards in proactive turns.
- :func:`trim_result` — an ``after_tool_call`` hook: shortens very long tool results.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_RESULT_CHARS", "guard", "trim_result"]

MAX_RESULT_CHARS = 4000
"""Tool results longer than this are cut down before the model reads them."""

_CUT_NOTICE = "\n……（结果太长，后面还有 {rest} 字没给出；需要细节就缩小范围再查一次）"


def guard(call: Any, conversation: Any) -> str | None:
    """Refuse ``data_access_request`` in proactive turns.

    A consent card ends the turn and waits for the user; in a turn the user did not
    start, it would pop up out of nowhere. Asking for access belongs in a conversation
    the user is having.

    Args:
        call: The pending tool call (only its ``name`` is read).
        conversation: The conversation; ``conversation.proactive.is_running()`` tells
            whether this is a proactive turn.

    Returns:
        ``None`` to let the call run, or the reason it is refused.
    """
    if getattr(call, "name", None) != "data_access_request":
        return None
    if conversation.proactive.is_running():
        return (
            "主动服务的回合里不发授权卡：用户没在聊天，突然弹出授权请求会很突兀。"
            "这次只用已经授权的数据；需要更多数据，等用户下次来聊时再问。"
        )
    return None


def _text_of(result: Any) -> str | None:
    """The text of a tool result, or ``None`` for a result that has none.

    A string is its own text; an object may carry it in ``text``; a mapping or list
    (structured data) counts as its JSON.
    """
    if isinstance(result, str):
        return result
    if isinstance(result, dict | list):
        return json.dumps(result, ensure_ascii=False, default=str)
    text = getattr(result, "text", None)
    return text if isinstance(text, str) else None


def trim_result(call: Any, result: Any, conversation: Any) -> str | None:
    """Shorten a tool result longer than :data:`MAX_RESULT_CHARS` characters.

    A month of workouts or heart-rate samples can run to hundreds of kilobytes; the
    model needs the gist, not every sample. The cut keeps whole lines where it can
    and ends with a note saying how much was left out, so the model knows to narrow
    its query instead of trusting a partial answer.

    Args:
        call: The finished tool call (not needed here).
        result: What the tool returned: text, an object with a ``text`` attribute, or
            structured data (a dict or list, measured and cut as JSON).
        conversation: The conversation (not needed here).

    Returns:
        ``None`` to keep the result as it is, or the shortened text (at most
        :data:`MAX_RESULT_CHARS` characters).
    """
    del call, conversation
    text = _text_of(result)
    if text is None or len(text) <= MAX_RESULT_CHARS:
        return None
    # Reserve room for the notice; the digit count of `rest` is at most that of len(text).
    room = MAX_RESULT_CHARS - len(_CUT_NOTICE.format(rest=len(text)))
    cut = text.rfind("\n", 0, room + 1)
    if cut < room // 2:  # no line break in the second half: cut mid-line instead
        cut = room
    head = text[:cut].rstrip()
    return head + _CUT_NOTICE.format(rest=len(text) - len(head))
