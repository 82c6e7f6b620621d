"""What the playground's data panel shows of the buddy: the datasets it declares, and
the catalogue (the panel's data picker, the proactive panel's trigger datasets)."""

from __future__ import annotations

from typing import Any

from buddy.capabilities.data.compiled import declared
from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.compile.blueprint import Blueprint

__all__ = ["panel"]


def panel(blueprint: Blueprint) -> dict[str, Any]:
    """The declared datasets (the panel's grants and data rows) and the catalogue."""
    return {
        "data": [
            {"id": r.id, "title": r.title, "purpose": r.purpose}
            for r in declared(blueprint).requirements
        ],
        "catalogue": [
            {"id": key, "title": item.title} for key, item in DATA_ACCESS_CAPABILITIES.items()
        ],
    }
