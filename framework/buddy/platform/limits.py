"""The platform's limits (SPEC §4), shared by the dev platform, the client and the tools.

One table, so the server's checks, the runtime's tool schemas and the tests' boundary
cases cannot drift apart. Where a rule is more than a number (a memory key's pattern, a
write that would overfill memory), the rule itself is here too, as a function answering
the :class:`Refusal` the platform gives: the dev platform raises it as its HTTP answer,
``buddy.Agent``'s in-process client as the ``PlatformError`` the HTTP client would raise
for that answer, and the model tools' schemas use the same pattern and bounds.

Standard library only: ``buddy validate`` imports this module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ASK_OPTIONS_MAX",
    "ASK_OPTIONS_MIN",
    "ASK_OPTION_CHARS",
    "ASK_QUESTION_CHARS",
    "CALENDAR_DAYS_DEFAULT",
    "CALENDAR_DAYS_MAX",
    "CALENDAR_DAYS_MIN",
    "COOLDOWN_DEFAULT",
    "COOLDOWN_MAX",
    "DAILY_LIMIT_DEFAULT",
    "DAILY_LIMIT_MAX",
    "DAILY_LIMIT_MIN",
    "DECLARATION_REQUIREMENTS_MAX",
    "INTERVAL_MAX",
    "INTERVAL_MIN",
    "JSON_DEPTH_MAX",
    "MEMORY_ENTRIES_MAX",
    "MEMORY_KEY_CHARS",
    "MEMORY_KEY_PATTERN",
    "MEMORY_KEY_SCHEMA",
    "MEMORY_TEXT_BYTES",
    "MEMORY_TOTAL_BYTES",
    "MESSAGE_TEXT_CHARS",
    "ONE_TIME_RESULT_SECONDS",
    "PURPOSE_CHARS",
    "QUERY_DATASETS_MAX",
    "QUERY_RESPONSE_BYTES",
    "REQUEST_REASON_CHARS",
    "STEP_CONTENT_BYTES",
    "STEP_CONTENT_DEPTH",
    "SUBSCRIPTIONS_ACTIVE_MAX",
    "SUBSCRIPTION_KEY_CHARS",
    "SUBSCRIPTION_KEY_PATTERN",
    "SUBSCRIPTION_REASON_CHARS",
    "SUBSCRIPTION_TITLE_CHARS",
    "WIDGET_SUMMARY_CHARS",
    "WIDGET_TITLE_CHARS",
    "Refusal",
    "memory_capacity_refusal",
    "memory_key_refusal",
    "memory_text_refusal",
]

# Memory (per conversation).
MEMORY_KEY_CHARS = 64
MEMORY_TEXT_BYTES = 16 * 1024
MEMORY_ENTRIES_MAX = 64
MEMORY_TOTAL_BYTES = 256 * 1024
# A key's characters: none of these (a regex class). The platform and the model tools'
# schema use the one pattern, and the runtime validates tool arguments with Python's
# `re`, so "whitespace" is Python's `str.isspace` everywhere it is checked.
_KEY_NOT = r"\s/"
MEMORY_KEY_PATTERN = f"^[^{_KEY_NOT}]+$"
_KEY_FORBIDDEN = re.compile(f"[{_KEY_NOT}]")
# What a model is told when a tool parameter *is* a memory key (length in characters).
MEMORY_KEY_SCHEMA: Mapping[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MEMORY_KEY_CHARS,
    "pattern": MEMORY_KEY_PATTERN,
}

# Question cards.
ASK_QUESTION_CHARS = 500
ASK_OPTION_CHARS = 30
ASK_OPTIONS_MIN = 2
ASK_OPTIONS_MAX = 4

# User data.
DECLARATION_REQUIREMENTS_MAX = 32
PURPOSE_CHARS = 200
QUERY_DATASETS_MAX = 8
QUERY_RESPONSE_BYTES = 512 * 1024
CALENDAR_DAYS_MIN = 1
CALENDAR_DAYS_MAX = 31
CALENDAR_DAYS_DEFAULT = 7
REQUEST_REASON_CHARS = 200
ONE_TIME_RESULT_SECONDS = 10 * 60  # how long a location/calendar result stays readable

# Widgets.
WIDGET_TITLE_CHARS = 100
WIDGET_SUMMARY_CHARS = 500

# Proactive.
SUBSCRIPTIONS_ACTIVE_MAX = 20
SUBSCRIPTION_KEY_CHARS = 64
SUBSCRIPTION_KEY_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"  # 1–64 characters
SUBSCRIPTION_TITLE_CHARS = 100
SUBSCRIPTION_REASON_CHARS = 500
INTERVAL_MIN = 60
INTERVAL_MAX = 525600
COOLDOWN_DEFAULT = 120
COOLDOWN_MAX = 10080
DAILY_LIMIT_DEFAULT = 3
DAILY_LIMIT_MIN = 1
DAILY_LIMIT_MAX = 20

# Messages a user sends (dev platform) and replies a buddy commits.
MESSAGE_TEXT_CHARS = 8000

# Free-form JSON the platform stores and serves back (docs/protocol.md "Values").
# Any request body: objects and arrays nested at most this deep (pydantic's JSON parser
# stops at about 200, Python's recursion at about 1000: every read must succeed).
JSON_DEPTH_MAX = 100
# One persisted step's `content` of a turn commit: nesting, and size as compact UTF-8 JSON.
STEP_CONTENT_DEPTH = 32
STEP_CONTENT_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Refusal:
    """How the platform refuses a request that breaks a rule: its HTTP answer.

    Attributes:
        status: The HTTP status (400 for every limit here).
        code: The stable machine-readable code, e.g. ``memory_key_invalid``.
        reason: The sentence the platform answers (a model inside a tool reads it).
    """

    status: int
    code: str
    reason: str


def memory_key_refusal(key: str) -> Refusal | None:
    """Why ``key`` is not a memory key (empty, too long, whitespace, ``/``, not Unicode)."""
    if not key:
        return Refusal(400, "memory_key_invalid", "memory key is empty")
    if len(key) > MEMORY_KEY_CHARS:
        return Refusal(
            400,
            "memory_key_invalid",
            f"memory key is {len(key)} characters; the limit is {MEMORY_KEY_CHARS}",
        )
    bad = _KEY_FORBIDDEN.search(key)
    if bad is not None:
        what = "'/'" if bad.group() == "/" else f"whitespace ({bad.group()!r})"
        return Refusal(
            400,
            "memory_key_invalid",
            f"memory key has {what} at character {bad.start() + 1}; keys may not contain"
            " whitespace or '/'",
        )
    for index, char in enumerate(key):
        if "\ud800" <= char <= "\udfff":
            return Refusal(
                400,
                "memory_key_invalid",
                f"memory key has a lone surrogate at character {index + 1};"
                " keys must be valid Unicode",
            )
    return None


def memory_text_refusal(text: str) -> Refusal | None:
    """Why ``text`` cannot be a memory entry's text (over the byte limit, not Unicode)."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return Refusal(
            400, "invalid_request", "text is not valid UTF-8: it contains an unpaired surrogate"
        )
    if size > MEMORY_TEXT_BYTES:
        return Refusal(
            400,
            "memory_text_too_long",
            f"memory text is {size} bytes; the limit is {MEMORY_TEXT_BYTES}",
        )
    return None


def memory_capacity_refusal(count: int, total: int, old: int | None, size: int) -> Refusal | None:
    """Why a write of ``size`` bytes does not fit a conversation's memory.

    Args:
        count: Entries stored now.
        total: Bytes of text stored now (UTF-8).
        old: Bytes of the text the write replaces, or ``None`` for a new key.
        size: Bytes of the new text.
    """
    if old is None and count >= MEMORY_ENTRIES_MAX:
        return Refusal(
            400,
            "memory_full",
            f"memory has {count} entries; the limit is {MEMORY_ENTRIES_MAX}"
            " (delete one or overwrite an existing key)",
        )
    after = total - (old or 0) + size
    if after > MEMORY_TOTAL_BYTES:
        return Refusal(
            400,
            "memory_total_too_large",
            f"memory would hold {after} bytes of text after this write;"
            f" the limit is {MEMORY_TOTAL_BYTES}",
        )
    return None
