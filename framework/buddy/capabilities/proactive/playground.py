"""What the playground's proactive panel shows of the buddy: its declared subscriptions."""

from __future__ import annotations

from typing import Any

from buddy.capabilities.proactive.compiled import declared
from buddy.compile.blueprint import Blueprint

__all__ = ["panel"]


def panel(blueprint: Blueprint) -> dict[str, Any]:
    """The declared subscriptions (the panel notes those not yet active), each trigger's
    fields as the platform's subscriptions give them, so the panel says both alike."""
    return {
        "subscriptions": [
            {
                "key": s.key,
                "title": s.title,
                "trigger": s.trigger.type,
                "dataset": s.trigger.dataset,
                "at": s.trigger.at.isoformat() if s.trigger.at is not None else None,
                "interval_minutes": s.trigger.interval_minutes,
                "activate": s.activate,
            }
            for s in declared(blueprint).subscriptions
        ]
    }
