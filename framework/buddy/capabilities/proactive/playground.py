"""What the playground's proactive panel shows of the buddy: its declared subscriptions."""

from __future__ import annotations

from typing import Any

from buddy.capabilities.proactive.compiled import declared
from buddy.compile.blueprint import Blueprint

__all__ = ["panel"]


def panel(blueprint: Blueprint) -> dict[str, Any]:
    """The declared subscriptions (the panel notes those not yet active)."""
    return {
        "subscriptions": [
            {
                "key": s.key,
                "title": s.title,
                "trigger": s.trigger.type,
                "dataset": s.trigger.dataset,
                "activate": s.activate,
            }
            for s in declared(blueprint).subscriptions
        ]
    }
