"""Where the triggered lore goes when the persona template does not place ``lore``
(``Section.placed``; :mod:`buddy.compile.placement`). The same words as the shared
template ``companion.md.j2``'s ``companion`` block. Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["HEADING", "text"]

HEADING = "## 背景设定"


def text(value: Mapping[str, Any]) -> str:
    """The entries' text under its heading; ``""`` when none is triggered."""
    said = str(value.get("text") or "")
    return f"{HEADING}\n{said}" if said else ""
