"""Free-form JSON values on the wire: what the platform can store and serve back.

A value the platform accepts must come back out of every read of it: valid Unicode, only
finite numbers (JSON cannot carry ``NaN`` or ``Infinity``; Python's parser reads them and
``1e400`` anyway), and nested no deeper than the readers can follow (pydantic's JSON
parser gives up at about 200 levels, so a record stored deeper would answer 500 on every
read of it). The checks walk the value with an explicit stack: a hostile value cannot
exhaust Python's recursion either.
"""

from __future__ import annotations

import json
import math
from typing import Any

from buddy.platform.limits import STEP_CONTENT_BYTES, STEP_CONTENT_DEPTH, Refusal

__all__ = [
    "compact_bytes",
    "json_problem",
    "shown_path",
    "step_content_refusal",
    "valid_unicode",
]


def valid_unicode(value: str) -> str:
    """Refuse text that cannot be stored as UTF-8 (a lone surrogate such as ``"\\ud800"``).

    Raises:
        ValueError: When ``value`` has a lone surrogate.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"has a lone surrogate at character {exc.start}; text must be valid Unicode"
        ) from None
    return value


def _unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_path(path: str, limit: int = 120) -> str:
    """``path`` shortened for a reason sentence (its start and its end are what tell)."""
    if len(path) <= limit:
        return path
    return f"{path[: limit // 2]}…{path[-(limit // 2) :]}"


def json_problem(value: Any, depth_max: int, where: str = "$") -> str | None:
    """Why a parsed JSON value cannot be stored and served back, or ``None``.

    Refused: nesting deeper than ``depth_max`` (objects and arrays count one level each,
    so ``{"a": [1]}`` is 2 deep), a non-finite number, and strings or keys with a lone
    surrogate (not valid Unicode). The answer names the place, e.g. ``at $.a[3]``.
    """
    stack: list[tuple[Any, int, str]] = [(value, 1, where)]
    while stack:
        item, depth, here = stack.pop()
        if isinstance(item, dict | list):
            if depth > depth_max:
                return f"nests deeper than {depth_max} levels at {shown_path(here)}"
            if isinstance(item, dict):
                for key, child in item.items():
                    if isinstance(key, str) and not _unicode(key):
                        return (
                            f"has a key with a lone surrogate at {here}; keys must be valid Unicode"
                        )
                    stack.append((child, depth + 1, f"{here}.{key}"))
            else:
                stack.extend((child, depth + 1, f"{here}[{i}]") for i, child in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            return f"has a non-finite number ({item}) at {shown_path(here)}; JSON numbers must be finite"
        elif isinstance(item, str) and not _unicode(item):
            return f"has a lone surrogate at {shown_path(here)}; text must be valid Unicode"
    return None


def compact_bytes(value: Any) -> int:
    """The size of ``value`` as compact UTF-8 JSON, the form the platform stores."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def step_content_refusal(index: int, content: Any) -> Refusal | None:
    """Why the ``index``-th step's ``content`` cannot be stored: too deep or too large.

    The limits keep every stored record readable (docs/protocol.md "Values"); a runtime
    records an argument it cannot keep within them as a bounded string instead.
    """
    where = f"steps[{index}].content"
    problem = json_problem(content, STEP_CONTENT_DEPTH, where)
    if problem is not None:
        return Refusal(400, "step_content_invalid", f"{where} {problem}")
    size = compact_bytes(content)
    if size > STEP_CONTENT_BYTES:
        return Refusal(
            400,
            "step_content_too_large",
            f"{where} is {size} bytes as UTF-8 JSON; the limit is {STEP_CONTENT_BYTES}",
        )
    return None
