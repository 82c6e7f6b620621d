"""Wire shapes of conversations, turns, history and the dev platform's user-side actions."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from buddy.platform.limits import (
    ASK_OPTION_CHARS,
    ASK_OPTIONS_MAX,
    ASK_OPTIONS_MIN,
    ASK_QUESTION_CHARS,
    JSON_DEPTH_MAX,
    MESSAGE_TEXT_CHARS,
    STEP_CONTENT_BYTES,
    STEP_CONTENT_DEPTH,
    TURN_STEPS_MAX,
    Refusal,
)
from buddy.platform.protocol.values import (
    shown_path,
    step_content_refusal,
)

__all__ = [
    "BuddyCreated",
    "ClockState",
    "ConversationInfo",
    "Integral",
    "Member",
    "MessageOut",
    "NewBuddy",
    "NewConversation",
    "NewMember",
    "OptionClick",
    "QuestionCard",
    "Summary",
    "TurnCommit",
    "TurnCommitted",
    "TurnRecord",
    "TurnStep",
    "UserMessage",
    "Wire",
    "refused",
    "step_content_refusal",
]


def _bad_value(value: Any) -> tuple[str, str] | None:
    """The first problem of a request body as ``(kind, path)``: a string or key with a
    lone surrogate (``invalid_unicode``), a non-finite number (``non_finite_number``),
    or nesting deeper than ``JSON_DEPTH_MAX`` (``too_deep``). Walked with a stack, not
    recursion, so no depth can exhaust Python's."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return "invalid_unicode", path or "the body"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "non_finite_number", path or "the body"
        elif isinstance(item, dict | list):
            if depth > JSON_DEPTH_MAX:
                return "too_deep", path or "the body"
            if isinstance(item, dict):
                children: list[tuple[Any, str, int]] = []
                for key, child in item.items():
                    here = f"{path}.{key}" if path else str(key)
                    if isinstance(key, str) and _SURROGATE.search(key):
                        return "invalid_unicode", here
                    children.append((child, here, depth + 1))
            else:
                children = [(child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item)]
            stack.extend(reversed(children))  # depth first, in document order
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")
_PROBLEMS = {
    "invalid_unicode": "{field} is not valid UTF-8: it contains an unpaired surrogate",
    "non_finite_number": "{field} is not a finite number; JSON numbers must be finite"
    " (no NaN, Infinity or numbers beyond the range of a double)",
    "too_deep": "{field} nests deeper than "
    + str(JSON_DEPTH_MAX)
    + " levels of objects and arrays",
}


class Wire(BaseModel):
    """Base of every request body: strict types (``"1"`` is not a number, ``0`` not
    ``false``), unknown fields refused (400), and nothing the platform could not serve
    back: text that is not valid Unicode (JSON may escape a lone surrogate), non-finite
    numbers (Python's JSON parser reads ``NaN`` and turns ``1e400`` into infinity), and
    nesting deeper than ``JSON_DEPTH_MAX``."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _values(cls, data: Any) -> Any:
        found = _bad_value(data)
        if found is not None:
            kind, where = found
            # The path may itself hold the surrogate (a key): show it escaped.
            where = shown_path(where.encode("utf-8", "backslashreplace").decode("utf-8"))
            raise PydanticCustomError(kind, _PROBLEMS[kind], {"field": where})
        return data


def refused(refusal: Refusal) -> PydanticCustomError:
    """``refusal`` as a validation error: the dev platform answers it as the refusal it is
    (its status 400 and its own ``code``, not ``invalid_request``), so a rule can live in a
    wire model — where the OpenAPI document states it — and keep its code."""
    return PydanticCustomError(
        refusal.code, "{reason}", {"code": refusal.code, "reason": refusal.reason}
    )


def _integral(value: Any) -> Any:
    # JSON does not tell 3 from 3.0, and JSON Schema's `integer` admits both: a number
    # without a fraction is the integer it is (strictness stays: "3" and true are refused).
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: Reads an integer of a request body also when written with a zero fraction (``3.0``):
#: ``Annotated[int, Field(ge=…), Integral]`` (the bounds before it, so the document has them).
Integral = BeforeValidator(_integral)


class Member(BaseModel):
    """A person in a conversation; ``member_id`` (``m_…``) is stable across conversations."""

    member_id: str
    name: str


class ConversationInfo(BaseModel):
    """``GET /internal/v1/conversation``."""

    id: str
    kind: Literal["private", "group"]
    members: list[Member]


def _distinct_options(options: list[str]) -> list[str]:
    if len(set(options)) != len(options):
        raise refused(
            Refusal(400, "question_options_duplicate", "question options must be distinct")
        )
    return options


class QuestionCard(Wire):
    """A question card: a question and 2–4 distinct options."""

    question: str = Field(min_length=1, max_length=ASK_QUESTION_CHARS)
    options: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=ASK_OPTION_CHARS)]],
        AfterValidator(_distinct_options),
    ] = Field(
        min_length=ASK_OPTIONS_MIN,
        max_length=ASK_OPTIONS_MAX,
        json_schema_extra={"uniqueItems": True},
        description="Distinct (`400 question_options_duplicate`).",
    )


class TurnStep(Wire):
    """One persisted step of a turn.

    ``type`` is ``text``, ``reasoning``, ``tool_call`` or ``tool_result``. After the turn
    read user data, steps carry ``redacted: true`` and no content; data-access results are
    persisted as dataset statuses only.
    """

    type: Literal["text", "reasoning", "tool_call", "tool_result"]
    tool: str | None = None
    call_id: str | None = None
    content: Any = Field(
        default=None,
        description=f"Any JSON value: at most {STEP_CONTENT_DEPTH} levels of objects and"
        f" arrays, at most {STEP_CONTENT_BYTES} bytes as compact UTF-8 JSON.",
    )
    redacted: bool = False
    is_error: bool = False


class TurnCommit(Wire):
    """``POST /internal/v1/conversation/turns``: the output of one turn, idempotent on ``event_id``."""

    event_id: str = Field(min_length=1, description="The event this turn answers.")
    reply: str | None = Field(
        default=None,
        max_length=MESSAGE_TEXT_CHARS,
        description="What the user sees; null = nothing.",
    )
    question: QuestionCard | None = None
    steps: list[TurnStep] = Field(default_factory=list, max_length=TURN_STEPS_MAX)
    data_read: bool = Field(default=False, description="Whether the turn read user data.")


class TurnCommitted(BaseModel):
    """The answer to a turn commit.

    ``status``: ``committed`` (shown to the user), ``skipped`` (a proactive reply the gates
    stopped at commit time: nothing shown, reason given), or ``duplicate`` (this event's turn
    was committed before: nothing new shown).
    """

    status: Literal["committed", "skipped", "duplicate"]
    reason: str = ""
    message_ids: list[str] = Field(default_factory=list)


class TurnRecord(BaseModel):
    """A stored turn, as the runtime rebuilds history from it."""

    event_id: str
    event_type: str
    proactive: bool
    user_text: str | None
    sender: Member | None
    reply: str | None
    question: QuestionCard | None
    steps: list[TurnStep]
    data_read: bool
    created_at: float


class Summary(Wire):
    """A compaction summary of a conversation's earlier turns."""

    text: str = Field(min_length=1, max_length=64 * 1024)
    covers_until: float = Field(description="Turns created up to this time are summarised.")


class MessageOut(BaseModel):
    """A message in a conversation's transcript (what its users saw)."""

    id: str
    sender: Literal["user", "buddy"]
    member_id: str | None
    kind: str
    body: dict[str, Any]
    created_at: float


# ---------------------------------------------------------------- dev endpoints


# A buddy id that ends in `-dev` is refused (``NewBuddy``): the document says so too.
_NOT_DEV: dict[str, Any] = {"not": {"pattern": "-dev$"}}


class NewBuddy(Wire):
    """``POST /dev/buddies``.

    An id may not end in ``-dev``: ``<buddyId>-dev`` is the dev identity of ``<buddyId>``,
    and a buddy registered as ``aunt-tu-dev`` would otherwise see aunt-tu's dev data.
    """

    buddy_id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$", json_schema_extra=_NOT_DEV)

    @model_validator(mode="after")
    def _not_a_dev_identity(self) -> NewBuddy:
        if self.buddy_id.endswith("-dev"):
            raise PydanticCustomError(
                "dev_suffix",
                "buddy_id {buddy_id} ends in -dev, which names the dev identity of buddy "
                "{base}; choose an id that does not end in -dev",
                {"buddy_id": self.buddy_id, "base": self.buddy_id.removesuffix("-dev")},
            )
        return self


class BuddyCreated(BaseModel):
    """A registered buddy and its two tokens (shown once)."""

    buddy_id: str
    token: str
    dev_token: str


class NewMember(Wire):
    """A person to put in a new conversation; a new ``m_…`` id is made when none is given."""

    name: str = Field(min_length=1, max_length=64)
    member_id: str | None = Field(default=None, pattern=r"^m_[A-Za-z0-9_-]{1,40}$")


class NewConversation(Wire):
    """``POST /dev/conversations``: a private conversation has exactly one member
    (``400 private_needs_one_member``); a ``member_id`` may be listed once
    (``400 member_duplicate``)."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"kind": {"const": "group"}}},
                {"properties": {"members": {"maxItems": 1}}},
            ]
        }
    )

    identity: str = Field(min_length=1, description="`<buddyId>` or `<buddyId>-dev`.")
    kind: Literal["private", "group"]
    members: list[NewMember] = Field(min_length=1, max_length=50)
    title: str = Field(default="", max_length=100)

    @model_validator(mode="after")
    def _one_member_if_private(self) -> NewConversation:
        if self.kind == "private" and len(self.members) != 1:
            raise refused(
                Refusal(
                    400,
                    "private_needs_one_member",
                    "a private conversation has exactly one member",
                )
            )
        return self


class UserMessage(Wire):
    """``POST /dev/conversations/{id}/messages``: a user says something."""

    text: str = Field(min_length=1, max_length=MESSAGE_TEXT_CHARS)
    member_id: str | None = Field(default=None, description="Required in groups.")


class OptionClick(Wire):
    """``POST /dev/conversations/{id}/options``: a user clicks a question card's option."""

    message_id: str
    option: str = Field(min_length=1, max_length=ASK_OPTION_CHARS)
    member_id: str | None = None


class ClockState(Wire):
    """``POST /dev/clock``: advance the platform clock (never backwards)."""

    advance_seconds: float = Field(default=0, ge=0, le=10 * 366 * 86400)
