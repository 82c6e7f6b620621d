"""What ``buddy render`` shows of the widget types: each type's title, description, file
and modules with their record schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from buddy.capabilities.widgets.compiled import WidgetType
from buddy.compile.render import json_block, relative

__all__ = ["render_markdown", "render_widgets"]


def render_widgets(widgets: tuple[WidgetType, ...], root: Path) -> list[dict[str, Any]]:
    """The ``widgets`` part of the compiled view."""
    return [
        {
            "type": w.type,
            "title": w.title,
            "description": w.description,
            "file": relative(w.file, root),
            "modules": [{"name": m.name, "title": m.title, "record": m.record} for m in w.modules],
        }
        for w in widgets
    ]


def render_markdown(shown: list[dict[str, Any]]) -> list[str]:
    """One heading and one JSON block per type."""
    out: list[str] = []
    for w in shown:
        out.append(f"### `{w['type']}` · {w['title']}\n")
        out.append(
            json_block(
                {"description": w["description"], "file": w["file"], "modules": w["modules"]}
            )
        )
    return out
