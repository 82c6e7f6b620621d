"""``proactive:`` compiled (:mod:`buddy.capabilities.proactive.compiled`): a key used
twice refused, every default filled in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from buddy.capabilities.proactive.compiled import (
    DEFAULT_PROACTIVE_PROMPT,
    ProactiveSpec,
    QuietHoursSpec,
    SubscriptionSpec,
    TriggerSpec,
)
from buddy.capabilities.proactive.manifest import (
    DEFAULT_QUIET_END,
    DEFAULT_QUIET_START,
    DEFAULT_TIMEZONE,
    DataUpdatedTrigger,
    EventTrigger,
    Proactive,
    ScheduleTrigger,
)

if TYPE_CHECKING:
    from buddy.extend import SectionContext

__all__ = ["compile_proactive"]


def compile_proactive(context: SectionContext) -> ProactiveSpec:
    """The subscriptions, refusing a key used twice."""
    section: Proactive = context.value or Proactive()
    seen: set[str] = set()
    subs: list[SubscriptionSpec] = []
    for index, sub in enumerate(section.subscriptions):
        if sub.key in seen:
            context.error(
                ("subscriptions", index, "key"),
                "subscription-duplicate",
                f"subscription key `{sub.key}` is used twice",
                "keys must be unique",
            )
            continue
        seen.add(sub.key)
        trigger = sub.trigger
        if isinstance(trigger, str):
            spec = TriggerSpec(trigger)
        elif isinstance(trigger, EventTrigger):
            spec = TriggerSpec(trigger.type)
        elif isinstance(trigger, DataUpdatedTrigger):
            spec = TriggerSpec(trigger.type, dataset=trigger.dataset)
        else:
            assert isinstance(trigger, ScheduleTrigger)
            spec = TriggerSpec(
                trigger.type, at=trigger.at, interval_minutes=trigger.interval_minutes
            )
        quiet = sub.quiet_hours
        subs.append(
            SubscriptionSpec(
                key=sub.key,
                title=sub.title,
                reason=sub.reason,
                trigger=spec,
                quiet_hours=QuietHoursSpec(quiet.start, quiet.end, quiet.timezone)
                if quiet
                else QuietHoursSpec(DEFAULT_QUIET_START, DEFAULT_QUIET_END, DEFAULT_TIMEZONE),
                cooldown_minutes=sub.cooldown_minutes,
                daily_limit=sub.daily_limit,
                activate=sub.activate,
            )
        )
    return ProactiveSpec(section.prompt or DEFAULT_PROACTIVE_PROMPT, tuple(subs))
