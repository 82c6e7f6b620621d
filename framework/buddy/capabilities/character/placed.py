"""Where the character's state goes when the persona template does not place
``character`` (``Section.placed``; :mod:`buddy.compile.placement`): the mood in words,
the same as the shared template ``companion.md.j2``'s ``companion`` block says it.
Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["HEADING", "text"]

HEADING = "## 你现在的心情"


def text(value: Mapping[str, Any]) -> str:
    """The mood of ``value`` (:func:`~buddy.capabilities.character.prompt.mood_context`)
    in words, under its heading."""
    anger, sadness, trust = (float(value[k]) for k in ("anger", "sadness", "trust"))
    if value["quarrel"]:
        held = "嘴上不松口，不说软话" if value["hold_words"] else "话少一点，语气冷一点"
        asks = "，等对方给个说法" if value["demand_explanation"] else ""
        lines = [f"你还在生气（{'%.0f' % (anger * 100)}/100）：{held}{asks}。"]
    elif anger > 0.2:
        lines = ["你有点不高兴，但不至于翻脸。"]
    else:
        lines = ["你心情平稳。"]
    if sadness > 0.3:
        lines.append("你有些难过，不想多说。")
    if trust < 0.3:
        lines.append("你对对方还有戒心，不轻易交心。")
    elif trust > 0.7:
        lines.append("你很信任对方，说话可以随意些。")
    return "\n".join([HEADING, *lines])
