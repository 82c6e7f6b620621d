"""Wire shapes of conversations, turns, history and the dev platform's user-side actions."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from buddy.platform.limits import (
    ASK_OPTION_CHARS,
    ASK_OPTIONS_MAX,
    ASK_OPTIONS_MIN,
    ASK_QUESTION_CHARS,
    MESSAGE_TEXT_CHARS,
)

__all__ = [
    "BuddyCreated",
    "ClockState",
    "ConversationInfo",
    "Member",
    "MessageOut",
    "NewBuddy",
    "NewConversation",
    "NewMember",
    "OptionClick",
    "QuestionCard",
    "Step",
    "Summary",
    "TurnCommit",
    "TurnCommitted",
    "TurnRecord",
    "UserMessage",
    "Wire",
]


_SURROGATE = re.compile("[\ud800-\udfff]")


def _bad_unicode(value: Any, path: str = "") -> str | None:
    """The path of the first string holding a lone surrogate, or ``None``."""
    if isinstance(value, str):
        return path or "the body" if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            found = _bad_unicode(key, here) or _bad_unicode(item, here)
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _bad_unicode(item, f"{path}[{index}]")
            if found:
                return found
    return None


class Wire(BaseModel):
    """Base of every request body: unknown fields are refused (400), and so is text that is
    not valid Unicode (JSON may escape a lone surrogate; it could be neither stored nor sent)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _unicode(cls, data: Any) -> Any:
        where = _bad_unicode(data)
        if where is not None:
            # The path may itself hold the surrogate (a key): show it escaped.
            where = where.encode("utf-8", "backslashreplace").decode("utf-8")
            raise PydanticCustomError(
                "invalid_unicode",
                "{field} is not valid UTF-8: it contains an unpaired surrogate",
                {"field": where},
            )
        return data


class Member(BaseModel):
    """A person in a conversation; ``member_id`` (``m_…``) is stable across conversations."""

    member_id: str
    name: str


class ConversationInfo(BaseModel):
    """``GET /internal/v1/conversation``."""

    id: str
    kind: Literal["private", "group"]
    members: list[Member]


class QuestionCard(Wire):
    """An ``ask_question`` card: a question and 2–4 distinct options."""

    question: str = Field(min_length=1, max_length=ASK_QUESTION_CHARS)
    options: list[Annotated[str, Field(min_length=1, max_length=ASK_OPTION_CHARS)]] = Field(
        min_length=ASK_OPTIONS_MIN, max_length=ASK_OPTIONS_MAX
    )


class Step(Wire):
    """One persisted step of a turn.

    ``type`` is ``text``, ``reasoning``, ``tool_call`` or ``tool_result``. After the turn
    read user data, steps carry ``redacted: true`` and no content; data-access results are
    persisted as dataset statuses only.
    """

    type: Literal["text", "reasoning", "tool_call", "tool_result"]
    tool: str | None = None
    call_id: str | None = None
    content: Any = None
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
    steps: list[Step] = Field(default_factory=list)
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
    steps: list[Step]
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


class NewBuddy(Wire):
    """``POST /dev/buddies``.

    An id may not end in ``-dev``: ``<buddyId>-dev`` is the dev identity of ``<buddyId>``,
    and a buddy registered as ``aunt-tu-dev`` would otherwise see aunt-tu's dev data.
    """

    buddy_id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")

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
    """``POST /dev/conversations``: a private conversation has exactly one member."""

    identity: str = Field(min_length=1, description="`<buddyId>` or `<buddyId>-dev`.")
    kind: Literal["private", "group"]
    members: list[NewMember] = Field(min_length=1, max_length=50)
    title: str = Field(default="", max_length=100)


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
