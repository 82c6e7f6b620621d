"""``proactive:`` in ``buddy.yaml``: the prompt of proactive turns and the declared
subscriptions.

Standard library and pydantic only: ``buddy validate`` imports it.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Discriminator, Field, Tag
from pydantic_core import PydanticCustomError

from buddy.capabilities.data.manifest import DatasetId
from buddy.capabilities.proactive.limits import (
    COOLDOWN_DEFAULT,
    COOLDOWN_MAX,
    DAILY_LIMIT_DEFAULT,
    DAILY_LIMIT_MAX,
    DAILY_LIMIT_MIN,
    INTERVAL_MAX,
    INTERVAL_MIN,
    SUBSCRIPTION_KEY_PATTERN,
    SUBSCRIPTION_REASON_CHARS,
    SUBSCRIPTION_TITLE_CHARS,
)
from buddy.manifest.schema import Strict, did_you_mean

__all__ = [
    "DEFAULT_QUIET_END",
    "DEFAULT_QUIET_START",
    "DEFAULT_TIMEZONE",
    "DataUpdatedTrigger",
    "EventTrigger",
    "Proactive",
    "QuietHours",
    "ScheduleTrigger",
    "Subscription",
    "Trigger",
]

DEFAULT_QUIET_START = "22:30"
DEFAULT_QUIET_END = "08:00"
DEFAULT_TIMEZONE = "Asia/Shanghai"
_TIME_RE = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")


def _check_time(value: str) -> str:
    if not _TIME_RE.match(value):
        raise PydanticCustomError(
            "time-format", "`{value}` is not a time of day `HH:MM` (00:00–23:59)", {"value": value}
        )
    return value


@cache
def _timezones() -> frozenset[str]:
    # `available_timezones` lists IANA keys only (no `localtime`, no file paths); the
    # tzdata package guarantees the same list on every machine.
    return frozenset(zoneinfo.available_timezones())


def _check_timezone(value: str) -> str:
    if value not in _timezones():
        raise PydanticCustomError(
            "timezone",
            "`{value}` is not an IANA timezone such as Asia/Shanghai",
            {"value": value, "hint": did_you_mean(value, sorted(_timezones()))},
        )
    return value


def _check_offset(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise PydanticCustomError(
            "datetime-offset",
            "`at` needs a UTC offset, e.g. 2026-12-07T20:00:00+08:00",
        )
    return value


TimeOfDay = Annotated[
    str, Field(json_schema_extra={"pattern": _TIME_RE.pattern}), AfterValidator(_check_time)
]


class QuietHours(Strict):
    """No proactive message between `start` and `end` (local time of `timezone`)."""

    start: TimeOfDay = DEFAULT_QUIET_START
    end: TimeOfDay = DEFAULT_QUIET_END
    timezone: Annotated[str, AfterValidator(_check_timezone)] = DEFAULT_TIMEZONE


class EventTrigger(Strict):
    """A platform event: a finished workout or a new night's sleep."""

    type: Literal["workout.completed", "sleep.ready"]


class DataUpdatedTrigger(Strict):
    """New data arrived, optionally only for one dataset."""

    type: Literal["data.updated"]
    dataset: DatasetId | None = None


class ScheduleTrigger(Strict):
    """A time, repeated every `interval_minutes` (fixed interval, no DST adjustment)."""

    type: Literal["schedule"]
    at: Annotated[datetime, Field(strict=False), AfterValidator(_check_offset)] = Field(
        description="ISO-8601 date-time with an offset."
    )
    interval_minutes: int | None = Field(default=None, ge=INTERVAL_MIN, le=INTERVAL_MAX)


TriggerMapping = Annotated[
    EventTrigger | DataUpdatedTrigger | ScheduleTrigger, Field(discriminator="type")
]


def _trigger_tag(value: Any) -> str:
    return "trigger-mapping" if isinstance(value, dict) else "event-name"


Trigger = Annotated[
    Annotated[Literal["workout.completed", "sleep.ready"], Tag("event-name")]
    | Annotated[TriggerMapping, Tag("trigger-mapping")],
    Discriminator(_trigger_tag),
]


class Subscription(Strict):
    """A proactive subscription, created by stable `key`."""

    key: str = Field(pattern=SUBSCRIPTION_KEY_PATTERN)
    title: str = Field(min_length=1, max_length=SUBSCRIPTION_TITLE_CHARS)
    reason: str = Field(min_length=1, max_length=SUBSCRIPTION_REASON_CHARS)
    trigger: Trigger
    quiet_hours: QuietHours | None = None
    cooldown_minutes: int = Field(default=COOLDOWN_DEFAULT, ge=0, le=COOLDOWN_MAX)
    daily_limit: int = Field(default=DAILY_LIMIT_DEFAULT, ge=DAILY_LIMIT_MIN, le=DAILY_LIMIT_MAX)
    activate: Literal["on_first_message", "manual"] = Field(
        default="on_first_message",
        description="`on_first_message`: created when a private conversation is first built; "
        "`manual`: a template that code or the model subscribes by key.",
    )


class Proactive(Strict):
    """Proactive turns: what the model is told in them, and the subscriptions."""

    prompt: str | None = Field(default=None, min_length=1, max_length=4000)
    subscriptions: list[Subscription] = Field(default_factory=list, max_length=20)
