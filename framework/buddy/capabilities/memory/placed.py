"""Where the person card goes when the persona template does not place ``memory``
(``Section.placed``; :mod:`buddy.compile.placement`). The same words as the shared
template ``companion.md.j2``'s ``companion`` block. Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["HEADING", "text"]

HEADING = "## 你记得的关于对方"


def text(value: Mapping[str, Any]) -> str:
    """The card under its heading; ``""`` while nothing is known."""
    card = str(value.get("card") or "")
    return f"{HEADING}\n{card}" if card else ""
