"""The memory capability's limits (SPEC §4). Memory, per conversation: key rules and how much fits.

One table, read by its tools' schemas, its wire models and its dev-platform part, so they
cannot drift apart. Standard library only: ``buddy validate`` imports it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from buddy.platform.limits import Refusal

__all__ = [
    "ASKS_MAX",
    "AUTO_KEY_PREFIX",
    "BUDGET_CHARS",
    "CARD_CHARS",
    "KEY_TEMPLATE_SCHEMAS",
    "MEMORY_BATCH_ITEMS",
    "MEMORY_ENTRIES_MAX",
    "MEMORY_KEY_CHARS",
    "MEMORY_KEY_PATTERN",
    "MEMORY_KEY_SCHEMA",
    "MEMORY_TEXT_BYTES",
    "MEMORY_TOTAL_BYTES",
    "RELATIONS_MAX",
    "RELATION_NAME_PATTERN",
    "RISK_TIERS",
    "SHARE_BYTES",
    "SHARE_ENTRIES",
    "WAIT_MS",
    "memory_capacity_refusal",
    "memory_key_refusal",
    "memory_text_refusal",
]

MEMORY_KEY_CHARS = 64
MEMORY_TEXT_BYTES = 16 * 1024
MEMORY_ENTRIES_MAX = 64
MEMORY_TOTAL_BYTES = 256 * 1024
#: One batch (``POST /internal/v1/memory``): at most this many deletes, and as many
#: writes — a conversation holds no more entries than that.
MEMORY_BATCH_ITEMS = MEMORY_ENTRIES_MAX

# Automatic memory (`memory:` in buddy.yaml): each bound is (default, least, most).
#: Relation specs one buddy may declare.
RELATIONS_MAX = 16
#: A relation's name (a spec's `relation:`, and a bare name in `relations:`).
RELATION_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
#: The person card the model reads every turn (characters).
CARD_CHARS = (600, 100, 4000)
#: Everything the companion layer adds to one system prompt (characters).
BUDGET_CHARS = (2000, 200, 8000)
#: How long a reply may wait for its own message's extraction (milliseconds); past it,
#: the turn goes on with what was known before.
WAIT_MS = (400, 0, 3000)
#: Facts held until the user confirms them, per conversation.
ASKS_MAX = (2, 0, 5)
#: The layer's share of the conversation's platform memory: entries (of 64) and bytes of
#: text (of 256 KiB). The rest stays for the buddy's own memory tools.
SHARE_ENTRIES = (32, 1, MEMORY_ENTRIES_MAX - 1)
SHARE_BYTES = (64 * 1024, 4 * 1024, MEMORY_TOTAL_BYTES - 4 * 1024)
#: A relation's risk tiers, lowest first: what a wrong fact costs (R0 nothing much … R3 real
#: harm). Eviction takes lower tiers first; the person card shows higher tiers first.
RISK_TIERS = ("R0", "R1", "R2", "R3")
#: The memory keys of the layer: reserved, the buddy's memory tools cannot write them.
AUTO_KEY_PREFIX = "auto:"
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
#: For a declarative tool (``uses: memory.write``): a parameter that is a whole ``key``
#: template is a memory key, and the model is told its rules.
KEY_TEMPLATE_SCHEMAS: Mapping[str, Mapping[str, Any]] = {"key": MEMORY_KEY_SCHEMA}


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
