"""A conversation's history: the model messages rebuilt from the platform's stored turn
records, and the compaction summary that stands for the older ones.

A conversation rebuilt after a restart (or recycled after it idled) sees the platform's
summary of its earlier turns and the recent raw turns; the summary is written back when the
history grows past :data:`COMPACT_AFTER_TURNS` turns, keeping the last
:data:`KEEP_RECENT_TURNS` raw. Pure functions of the records: the server reads and writes
them, this module only turns them into messages and text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from buddy.models.base import Message, ToolCall
from buddy.runtime.loop import REDACTED

if TYPE_CHECKING:
    from buddy.extend import EventKind

__all__ = [
    "COMPACT_AFTER_TURNS",
    "KEEP_RECENT_TURNS",
    "SUMMARY_CHARS",
    "records_to_messages",
    "summarised",
    "user_text",
]

COMPACT_AFTER_TURNS = 40
KEEP_RECENT_TURNS = 12
SUMMARY_CHARS = 16_000  # a summary keeps its newest part within this


def user_text(record: Mapping[str, Any], kinds: Mapping[str, EventKind]) -> str:
    """What stands for a stored turn's user message: a capability event's ``history``
    text, a group member's message prefixed ``[名字 #m_…]``, or the text."""
    sender = record.get("sender")
    text = record.get("user_text") or ""
    kind = kinds.get(str(record.get("event_type")))
    if kind is not None:
        return kind.history
    if isinstance(sender, dict) and record.get("group"):
        return f"[{sender.get('name')} #{sender.get('member_id')}] {text}"
    return str(text)


def records_to_messages(records: Sequence[Mapping[str, Any]], *, group: bool) -> list[Message]:
    """Model history from stored turn records (redacted steps stay redacted).

    A model step is stored as its reasoning, its text and its tool calls, in that order;
    each becomes one assistant message carrying the reasoning (providers such as
    DeepSeek want it back with every tool-calling step of the history).
    """
    from buddy.extend import event_kinds

    messages: list[Message] = []
    kinds = event_kinds()
    for record in records:
        messages.append(Message("user", user_text({**record, "group": group}, kinds)))
        pending: list[ToolCall] = []
        text = reasoning = ""

        def flush() -> None:
            nonlocal pending, text, reasoning
            if pending:
                messages.append(
                    Message("assistant", text, tool_calls=tuple(pending), reasoning=reasoning)
                )
                pending, text, reasoning = [], "", ""

        for step in record.get("steps", []):
            kind = step.get("type")
            if kind == "reasoning":
                flush()
                reasoning = REDACTED if step.get("redacted") else str(step.get("content") or "")
            elif kind == "text":
                flush()
                text = REDACTED if step.get("redacted") else str(step.get("content") or "")
            elif kind == "tool_call":
                arguments = (
                    "{}"
                    if step.get("redacted")
                    else json.dumps(step.get("content"), ensure_ascii=False)
                )
                pending.append(ToolCall(str(step.get("call_id")), str(step.get("tool")), arguments))
            elif kind == "tool_result":
                flush()
                content = REDACTED if step.get("redacted") else step.get("content")
                shown = (
                    content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
                )
                messages.append(
                    Message(
                        "tool",
                        shown,
                        tool_call_id=str(step.get("call_id")),
                        name=str(step.get("tool")),
                        is_error=bool(step.get("is_error")),
                    )
                )
        if pending:
            flush()
        elif text:
            messages.append(Message("assistant", text, reasoning=reasoning))
        elif record.get("reply"):
            messages.append(Message("assistant", str(record["reply"]), reasoning=reasoning))
    return messages


def summarised(
    summary: str,
    older: Sequence[Mapping[str, Any]],
    *,
    group: bool,
    kinds: Mapping[str, EventKind],
) -> str:
    """``summary`` (of the turns before ``older``, or ``""``) with ``older``'s turns added:
    what each side said, cut to 200 characters a line, the newest part kept within
    :data:`SUMMARY_CHARS`."""
    lines = [summary] if summary else []
    for record in older:
        said = user_text({**record, "group": group}, kinds)
        lines.append(f"- 对方：{said[:200]}")
        if record.get("reply"):
            lines.append(f"  我：{str(record['reply'])[:200]}")
    return "\n".join(lines)[-SUMMARY_CHARS:]
