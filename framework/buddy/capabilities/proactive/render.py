"""What ``buddy render`` shows of ``proactive:``: the prompt of proactive turns and every
declared subscription with its defaults filled in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from buddy.capabilities.proactive.compiled import ProactiveSpec
from buddy.compile.render import fence, json_block

__all__ = ["markdown_proactive", "render_proactive"]


def render_proactive(spec: ProactiveSpec, root: Path) -> dict[str, Any]:
    """The ``proactive`` part of the compiled view."""
    subscriptions = []
    for s in spec.subscriptions:
        trigger: dict[str, Any] = {"type": s.trigger.type}
        if s.trigger.dataset:
            trigger["dataset"] = s.trigger.dataset
        if s.trigger.at is not None:
            trigger["at"] = s.trigger.at.isoformat()
        if s.trigger.interval_minutes is not None:
            trigger["interval_minutes"] = s.trigger.interval_minutes
        subscriptions.append(
            {
                "key": s.key,
                "title": s.title,
                "reason": s.reason,
                "trigger": trigger,
                "quiet_hours": {
                    "start": s.quiet_hours.start,
                    "end": s.quiet_hours.end,
                    "timezone": s.quiet_hours.timezone,
                },
                "cooldown_minutes": s.cooldown_minutes,
                "daily_limit": s.daily_limit,
                "activate": s.activate,
            }
        )
    return {"prompt": spec.prompt, "subscriptions": subscriptions}


def markdown_proactive(shown: dict[str, Any]) -> list[str]:
    """The prompt as text, then the subscriptions as JSON."""
    return [fence(shown["prompt"], "text"), json_block(shown["subscriptions"])]
