"""The questions capability's limits (SPEC §4). Question cards.

One table, read by its tools' schemas, its wire models and its dev-platform part, so they
cannot drift apart. Standard library only: ``buddy validate`` imports it.
"""

from __future__ import annotations

__all__ = [
    "ASK_OPTIONS_MAX",
    "ASK_OPTIONS_MIN",
    "ASK_OPTION_CHARS",
    "ASK_QUESTION_CHARS",
]

ASK_QUESTION_CHARS = 500
ASK_OPTION_CHARS = 30
ASK_OPTIONS_MIN = 2
ASK_OPTIONS_MAX = 4
