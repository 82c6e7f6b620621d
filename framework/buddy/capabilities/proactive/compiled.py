"""``proactive:`` as the runtime holds it: the prompt of proactive turns and the declared
subscriptions with every default filled in. Standard library only: a start from the
compiled-buddy cache unpickles these."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = [
    "DEFAULT_PROACTIVE_PROMPT",
    "ProactiveSpec",
    "QuietHoursSpec",
    "SubscriptionSpec",
    "TriggerSpec",
    "declared",
]

#: What the model is told in a proactive turn when the manifest says nothing.
DEFAULT_PROACTIVE_PROMPT = (
    "这是主动服务的回合：没有用户刚发来的消息，是订阅的触发条件到了。"
    "先判断现在开口对用户有没有价值；有就直接写出要发给用户的话，简短、具体；"
    "没有就只输出跳过标记 [[skip]]，用户什么也不会看到。"
)


@dataclass(frozen=True, slots=True)
class QuietHoursSpec:
    """No proactive message between ``start`` and ``end`` in ``timezone``."""

    start: str
    end: str
    timezone: str


@dataclass(frozen=True, slots=True)
class TriggerSpec:
    """What fires a subscription.

    Attributes:
        type: ``workout.completed``, ``sleep.ready``, ``data.updated`` or ``schedule``.
        dataset: For ``data.updated``: only this dataset (``None`` = any).
        at: For ``schedule``: the first time, with its offset.
        interval_minutes: For ``schedule``: the fixed repeat interval, or ``None`` for once.
    """

    type: str
    dataset: str | None = None
    at: datetime | None = None
    interval_minutes: int | None = None


@dataclass(frozen=True, slots=True)
class SubscriptionSpec:
    """A proactive subscription with every default filled in."""

    key: str
    title: str
    reason: str
    trigger: TriggerSpec
    quiet_hours: QuietHoursSpec
    cooldown_minutes: int
    daily_limit: int
    activate: Literal["on_first_message", "manual"]


@dataclass(frozen=True, slots=True)
class ProactiveSpec:
    """What the model is told in proactive turns, and the subscriptions."""

    prompt: str
    subscriptions: tuple[SubscriptionSpec, ...] = ()


def declared(blueprint: Blueprint) -> ProactiveSpec:
    """The ``proactive:`` section of ``blueprint``: the prompt of proactive turns and the
    subscriptions (the default prompt and none when it has none)."""
    value: ProactiveSpec | None = blueprint.sections.get("proactive")
    return ProactiveSpec(DEFAULT_PROACTIVE_PROMPT) if value is None else value
