"""The widgets capability's limits (SPEC §4). Widgets.

One table, read by its tools' schemas, its wire models and its dev-platform part, so they
cannot drift apart. Standard library only: ``buddy validate`` imports it.
"""

from __future__ import annotations

__all__ = [
    "WIDGET_ID_PATTERN",
    "WIDGET_SUMMARY_CHARS",
    "WIDGET_TITLE_CHARS",
]

# Type and module names: a type's folder under ``widgets/``, a module's key in its
# ``schema.json``.
WIDGET_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"

WIDGET_TITLE_CHARS = 100
WIDGET_SUMMARY_CHARS = 500
