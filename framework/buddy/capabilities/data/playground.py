"""What the playground's data panel shows of the buddy: the datasets it declares."""

from __future__ import annotations

from typing import Any

from buddy.compile.blueprint import Blueprint

__all__ = ["panel"]


def panel(blueprint: Blueprint) -> dict[str, Any]:
    """The declared datasets (the panel's grants and data rows)."""
    return {
        "data": [
            {"id": r.id, "title": r.title, "purpose": r.purpose}
            for r in blueprint.data.requirements
        ]
    }
