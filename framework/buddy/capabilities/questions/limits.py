"""The questions capability's limits (SPEC §4): a question card's, which are the core
protocol's (a turn may end with a card; :mod:`buddy.platform.limits`), read by its tool's
schema. Standard library only: ``buddy validate`` imports it.
"""

from __future__ import annotations

from buddy.platform.limits import (
    ASK_OPTION_CHARS,
    ASK_OPTIONS_MAX,
    ASK_OPTIONS_MIN,
    ASK_QUESTION_CHARS,
)

__all__ = [
    "ASK_OPTIONS_MAX",
    "ASK_OPTIONS_MIN",
    "ASK_OPTION_CHARS",
    "ASK_QUESTION_CHARS",
]
