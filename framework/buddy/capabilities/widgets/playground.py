"""What the playground's widgets panel shows of the buddy: its widget types."""

from __future__ import annotations

from typing import Any

from buddy.capabilities.widgets.compiled import declared
from buddy.compile.blueprint import Blueprint

__all__ = ["panel"]


def panel(blueprint: Blueprint) -> dict[str, Any]:
    """The widget types, with each module's record schema (the panel's table columns)."""
    return {
        "widgets": [
            {
                "type": w.type,
                "title": w.title,
                "description": w.description,
                "modules": [
                    {"name": m.name, "title": m.title, "record": dict(m.record)} for m in w.modules
                ],
            }
            for w in declared(blueprint)
        ]
    }
