"""Wire shapes of proactive subscriptions, their runs and the dev trigger endpoint.

A subscription request is checked by the same rules as a manifest's
``proactive.subscriptions`` entry: the trigger and quiet-hours models are the manifest's
own (:mod:`buddy.manifest.schema`), the numeric limits come from
:mod:`buddy.capabilities.proactive.limits`. :func:`subscription_problem` turns validation errors into
the one-sentence reason of a ``400 subscription_invalid``.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.capabilities.proactive.limits import (
    COOLDOWN_DEFAULT,
    COOLDOWN_MAX,
    DAILY_LIMIT_DEFAULT,
    DAILY_LIMIT_MAX,
    DAILY_LIMIT_MIN,
    INTERVAL_MAX,
    INTERVAL_MIN,
    SUBSCRIPTION_KEY_CHARS,
    SUBSCRIPTION_KEY_PATTERN,
    SUBSCRIPTION_REASON_CHARS,
    SUBSCRIPTION_TITLE_CHARS,
)
from buddy.capabilities.proactive.manifest import (
    DEFAULT_QUIET_END,
    DEFAULT_QUIET_START,
    DEFAULT_TIMEZONE,
    DataUpdatedTrigger,
    EventTrigger,
    QuietHours,
    ScheduleTrigger,
    Trigger,
)
from buddy.manifest.schema import did_you_mean
from buddy.platform.protocol.conversation import Integral, Wire

__all__ = [
    "EVENT_TRIGGER_TYPES",
    "GATES",
    "SUBSCRIPTION_KEY_CHARS",
    "SUBSCRIPTION_KEY_PATTERN",
    "TRIGGER",
    "DevSubscription",
    "DevSubscriptionList",
    "DevTrigger",
    "ProactivePayload",
    "QuietHoursOut",
    "Run",
    "RunList",
    "SubscriptionList",
    "SubscriptionOut",
    "SubscriptionRequest",
    "Trigger",
    "TriggerOut",
    "Unsubscribed",
    "UnsubscribedAll",
    "key_problem",
    "subscription_problem",
]

# The key's length bound, as written in SUBSCRIPTION_KEY_PATTERN (1 + {0,63}).
# Triggers that the world fires (the dev platform: POST /dev/triggers); `schedule` fires itself.
EVENT_TRIGGER_TYPES = ("workout.completed", "sleep.ready", "data.updated")
# Why a run was not shown: the gates, in the order they are checked.
GATES = ("subscription_closed", "quiet_hours", "cooldown", "daily_limit")

# A trigger as stored and answered. Requests use the manifest's `Trigger` (its errors say
# which form was meant); answers use a plain union, which also serialises model instances.
TriggerOut = (
    Literal["workout.completed", "sleep.ready"]
    | Annotated[EventTrigger | DataUpdatedTrigger | ScheduleTrigger, Field(discriminator="type")]
)
TRIGGER: TypeAdapter[Any] = TypeAdapter(TriggerOut)


def _utf8(value: str) -> str:
    # JSON may carry "\ud800"; such a string cannot be stored (or shown) as UTF-8. (Strict
    # models refuse it themselves: `string_unicode`.)
    try:
        value.encode()
    except UnicodeEncodeError:
        raise PydanticCustomError(
            "not_utf8", "is not valid UTF-8 (an unpaired surrogate)"
        ) from None
    return value


Text = Annotated[str, AfterValidator(_utf8)]


def _quiet_hours_schema() -> dict[str, Any]:
    # The manifest's model, with what its validators check stated: `timezone` is an IANA
    # key of the platform's tz database.
    schema = QuietHours.model_json_schema()
    schema["properties"]["timezone"]["enum"] = sorted(zoneinfo.available_timezones())
    return {"anyOf": [schema, {"type": "null"}]}


class SubscriptionRequest(Wire):
    """``PUT /internal/v1/proactive/subscriptions/{key}``: create, or update and re-enable.

    The fields of a manifest subscription without ``key`` (it is in the path) and
    ``activate``. Strict like the manifest: ``"3"`` is not a number.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    title: str = Field(min_length=1, max_length=SUBSCRIPTION_TITLE_CHARS)
    reason: str = Field(
        min_length=1,
        max_length=SUBSCRIPTION_REASON_CHARS,
        description="Why the buddy may speak first; the model reads it in the proactive turn.",
    )
    trigger: Trigger = Field(
        description='"workout.completed" | "sleep.ready" | {"type": "data.updated", "dataset"?}'
        ' | {"type": "schedule", "at": ISO-8601 with offset, "interval_minutes"?}.'
    )
    quiet_hours: QuietHours | None = Field(
        default=None,
        description=f"Default {DEFAULT_QUIET_START}–{DEFAULT_QUIET_END} {DEFAULT_TIMEZONE}; "
        "each field optional.",
        json_schema_extra=_quiet_hours_schema(),
    )
    cooldown_minutes: Annotated[int, Field(ge=0, le=COOLDOWN_MAX), Integral] = COOLDOWN_DEFAULT
    daily_limit: Annotated[int, Field(ge=DAILY_LIMIT_MIN, le=DAILY_LIMIT_MAX), Integral] = (
        DAILY_LIMIT_DEFAULT
    )

    @field_validator("trigger", mode="before")
    @classmethod
    def _at_is_text(cls, value: Any) -> Any:
        # The manifest's trigger reads `at` laxly (YAML gives a datetime); on the wire it
        # is JSON text only: a number would be read as seconds since 1970.
        if isinstance(value, dict) and "at" in value and not isinstance(value["at"], str):
            raise PydanticCustomError(
                "trigger_at_type",
                "trigger.at must be an ISO-8601 date-time with a UTC offset, not {given}",
                {"given": type(value["at"]).__name__},
            )
        interval = value.get("interval_minutes") if isinstance(value, dict) else None
        if isinstance(interval, float) and interval.is_integer():  # JSON's 90.0 is 90
            return {**value, "interval_minutes": int(interval)}
        return value


class QuietHoursOut(BaseModel):
    """Quiet hours as stored: ``[start, end)`` local time of ``timezone``.

    ``start`` later than ``end`` spans midnight; ``start`` equal to ``end`` means none.
    """

    start: str
    end: str
    timezone: str


class SubscriptionOut(BaseModel):
    """A subscription as listed; ``status`` is ``active`` or ``closed``."""

    key: str
    title: str
    reason: str
    trigger: TriggerOut
    quiet_hours: QuietHoursOut
    cooldown_minutes: int
    daily_limit: int
    status: Literal["active", "closed"]
    created_at: float
    updated_at: float


class SubscriptionList(BaseModel):
    """``GET /internal/v1/proactive/subscriptions``: all of them, closed ones too, by key."""

    subscriptions: list[SubscriptionOut]


class Unsubscribed(BaseModel):
    """``DELETE /internal/v1/proactive/subscriptions/{key}``: whether the key exists."""

    found: bool


class UnsubscribedAll(BaseModel):
    """``DELETE /internal/v1/proactive/subscriptions``: how many active ones were closed."""

    closed: int


class ProactivePayload(BaseModel):
    """The payload of a ``proactive`` event: which subscription fired, and when."""

    subscription_key: str
    title: str
    reason: str
    trigger: TriggerOut
    fired_at: float = Field(description="Platform time, seconds since the epoch.")


# ---------------------------------------------------------------- dev endpoints


class DevTrigger(Wire):
    """``POST /dev/triggers``: the world reports an event for one user of one identity."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"type": {"const": "data.updated"}}},
                {"properties": {"dataset": {"type": "null"}}},
            ]
        }
    )

    identity: Text = Field(min_length=1, description="`<buddyId>` or `<buddyId>-dev`.")
    member_id: Text = Field(min_length=1)
    type: Literal["workout.completed", "sleep.ready", "data.updated"]
    dataset: str | None = Field(
        default=None,
        description="data.updated only: which dataset changed; a subscription without a "
        "dataset matches every data.updated.",
        json_schema_extra={
            "anyOf": [{"type": "string", "enum": list(DATA_ACCESS_CAPABILITIES)}, {"type": "null"}]
        },
    )

    @field_validator("dataset")
    @classmethod
    def _known_dataset(cls, value: str | None) -> str | None:
        if value is not None and value not in DATA_ACCESS_CAPABILITIES:
            hint = did_you_mean(value, tuple(DATA_ACCESS_CAPABILITIES))
            raise PydanticCustomError(
                "dataset_unknown",
                "`{dataset}` is not in the capability catalogue{hint}",
                {"dataset": value, "hint": f" ({hint})" if hint else ""},
            )
        return value

    @model_validator(mode="after")
    def _dataset_only_for_data(self) -> DevTrigger:
        if self.dataset is not None and self.type != "data.updated":
            raise PydanticCustomError(
                "dataset_not_allowed",
                "dataset is only for data.updated, not {type}",
                {"type": self.type},
            )
        return self


class Run(BaseModel):
    """One firing of a subscription: shown to the buddy (``fired``), stopped by a gate
    (``skipped``), or fired and then cancelled by unsubscribing (``cancelled``)."""

    id: str
    identity: str
    conversation_id: str
    subscription_key: str
    trigger_type: str
    due_at: float | None = Field(description="Schedule triggers: the instant the run was due.")
    status: Literal["fired", "skipped", "cancelled"]
    gate: Literal["subscription_closed", "quiet_hours", "cooldown", "daily_limit"] | None
    reason: str
    event_id: str | None
    created_at: float


class RunList(BaseModel):
    """Runs, oldest first."""

    runs: list[Run]


class DevSubscription(SubscriptionOut):
    """A subscription with where it lives and when its schedule fires next."""

    conversation_id: str
    member_id: str
    next_run_at: float | None


class DevSubscriptionList(BaseModel):
    """``GET /dev/proactive/subscriptions``."""

    subscriptions: list[DevSubscription]


# ---------------------------------------------------------------- reasons

# Union tags pydantic puts in an error's loc (not field names).
_TAGS = frozenset({"event-name", "trigger-mapping", *EVENT_TRIGGER_TYPES, "schedule"})
_RANGES: dict[str, tuple[int, int]] = {
    "interval_minutes": (INTERVAL_MIN, INTERVAL_MAX),
    "cooldown_minutes": (0, COOLDOWN_MAX),
    "daily_limit": (DAILY_LIMIT_MIN, DAILY_LIMIT_MAX),
}
_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "dict_type": "a JSON object",
    "model_type": "a JSON object",
    "model_attributes_type": "a JSON object",
    "datetime_type": "an ISO-8601 date-time with a UTC offset",
    "datetime_parsing": "an ISO-8601 date-time with a UTC offset",
    "datetime_from_date_parsing": "an ISO-8601 date-time with a UTC offset",
}
_TRIGGERS = "workout.completed, sleep.ready, data.updated or schedule"
_MAX_PROBLEMS = 3


def subscription_problem(errors: Sequence[Mapping[str, Any]]) -> str:
    """The reason of a ``400 subscription_invalid`` for pydantic/FastAPI validation errors.

    Args:
        errors: Error details whose ``loc`` starts with ``"body"`` or ``"path"``.

    Returns:
        Up to three plain sentences, e.g. ``"title is 101 characters; the limit is 100"``.
    """
    sentences: list[str] = []
    for error in errors:
        sentence = _sentence(error)
        if sentence not in sentences:
            sentences.append(sentence)
    more = len(sentences) - _MAX_PROBLEMS
    text = "; ".join(sentences[:_MAX_PROBLEMS]) or "the subscription is invalid"
    return f"{text}; and {more} more problem{'s' if more > 1 else ''}" if more > 0 else text


def _sentence(error: Mapping[str, Any]) -> str:
    kind = str(error.get("type", ""))
    loc = tuple(error.get("loc", ()))
    given = error.get("input")
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    if loc[:1] == ("path",):
        return key_problem(given if isinstance(given, str) else "")
    parts = [str(p) for p in loc[1:] if p not in _TAGS]
    field = ".".join(parts)
    name = parts[-1] if parts else ""
    if kind == "json_invalid":
        return "the body is not valid JSON"
    if kind == "trigger_at_type":  # raised by SubscriptionRequest, naming the field
        return str(error.get("msg"))
    if not field:
        if kind == "invalid_unicode":  # raised by `Wire` with the field's name
            return str(error.get("msg"))
        return "the body must be a JSON object with title, reason and trigger"
    if kind == "missing":
        return f"{field} is required"
    if kind == "extra_forbidden":
        return f"unknown field {field}"
    if kind == "string_too_long":
        return f"{field} is {len(str(given))} characters; the limit is {ctx.get('max_length')}"
    if kind == "string_too_short":
        return f"{field} must not be empty"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        if name in _RANGES:
            low, high = _RANGES[name]
            return f"{field} is {given}; it must be from {low} to {high}"
        return f"{field} is {given}: {error.get('msg')}"
    if kind == "literal_error":
        return f"{field} must be one of {_TRIGGERS}, not {_describe(given)}"
    if kind == "union_tag_invalid":
        return f"{field} type {_show(ctx.get('tag'))} is not one of {_TRIGGERS}"
    if kind == "union_tag_not_found":
        return f"{field} needs a type: {_TRIGGERS}"
    if kind in ("not_utf8", "string_unicode"):
        return f"{field} is not valid UTF-8 text (it has an unpaired surrogate)"
    if kind in _EXPECTED:
        return f"{field} must be {_EXPECTED[kind]}, not {_describe(given)}"
    hint = str(ctx.get("hint") or "")
    return f"{field}: {error.get('msg')}" + (f" ({hint})" if hint else "")


def key_problem(key: str) -> str:
    """Why ``key`` is not a valid subscription key."""
    if not key:
        return "key must not be empty"
    if len(key) > SUBSCRIPTION_KEY_CHARS:
        return f"key is {len(key)} characters; the limit is {SUBSCRIPTION_KEY_CHARS}"
    return (
        f"key {key!r} is invalid: use a–z, 0–9, '.', '_' and '-', starting with a letter or digit"
    )


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else _describe(value)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int | float):
        return f"the number {value}"
    return f"the string {value!r}" if isinstance(value, str) else type(value).__name__
