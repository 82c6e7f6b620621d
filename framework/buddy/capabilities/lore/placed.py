"""Where the triggered lore goes when the persona template does not place ``lore``
(``Section.placed``; :mod:`buddy.compile.placement`). The same words as the shared
template ``companion.md.j2``'s ``companion`` block. Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["HEADING", "text"]

HEADING = "## 背景设定"


def text(value: Mapping[str, Any]) -> tuple[str, str]:
    """``(before, after)`` the persona: the triggered entries' texts of each position
    under its heading (``""`` when none is triggered there). A value without positions
    (``before``/``after``) has all its ``text`` after."""
    before = str(value.get("before") or "")
    after = str((value.get("after") if "after" in value else value.get("text")) or "")
    return _headed(before), _headed(after)


def _headed(said: str) -> str:
    return f"{HEADING}\n{said}" if said else ""
