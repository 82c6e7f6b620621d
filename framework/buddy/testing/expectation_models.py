"""The ``expect:`` models of scenario files: what an author can write after a step.

The models are strict (unknown keys are errors): the format's own keys here
(:class:`CoreExpect`), each capability's in its ``scenario.py``
(:class:`~buddy.extend.StepExpect`), composed by :func:`expect_model`. The shared types
and union tags (:class:`Strict`, :data:`Text`, :data:`Data`, :func:`shape` …) are what
the capabilities' own models are built from. How an ``expect:`` mapping is checked is in
:mod:`buddy.testing.expectations`.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    create_model,
)
from pydantic_core import PydanticCustomError

from buddy.extend import resolve

if TYPE_CHECKING:
    from buddy.extend import StepExpect

__all__ = [
    "TOOL_NAME_PATTERN",
    "CalledCheck",
    "CoreExpect",
    "Data",
    "DeniedCheck",
    "PromptCheck",
    "QuestionCheck",
    "ReplyCheck",
    "ResultCheck",
    "Strict",
    "Text",
    "ToolName",
    "bool_or_mapping",
    "expect_model",
    "mapping_or_list",
    "plain",
    "shape",
    "text_or_mapping",
]

TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"


class Strict(BaseModel):
    """Base of every model a scenario author writes."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def _check_regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise PydanticCustomError(
            "regex",
            "`{value}` is not a valid regular expression: {problem}",
            {"value": value, "problem": str(exc)},
        ) from None
    return value


def plain(value: Any) -> Any:
    """Replace the YAML dates and times in ``value`` by the ISO text the author wrote.

    An unquoted ``date: 2026-12-01`` is a date to YAML, but a string to a tool or a record.
    """
    if isinstance(value, date | datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


Text = Annotated[str, Field(min_length=1)]
Data = Annotated[dict[str, Any], AfterValidator(plain)]
"""JSON-like data a scenario writes (tool arguments, records); dates become ISO text."""
ToolName = Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]
Regex = Annotated[str, Field(min_length=1), AfterValidator(_check_regex)]


# Union tags decided by the value's shape. Every value gets a tag, so a wrong shape is
# reported by the mapping member ("must be a mapping (got …)"), never as an unknown tag.


def shape(value: Any) -> str:
    """``text``, ``list`` or ``mapping``: the member of a text | mapping | list union."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "list"
    return "mapping"


def text_or_mapping(value: Any) -> str:
    """``text`` or ``mapping``: the member of a text | mapping union."""
    return "text" if isinstance(value, str) else "mapping"


def mapping_or_list(value: Any) -> str:
    return "list" if isinstance(value, list) else "mapping"


def bool_or_mapping(value: Any) -> str:
    return "flag" if isinstance(value, bool) else "mapping"


# ---------------------------------------------------------------- the expectations


class ReplyCheck(Strict):
    """Checks on the step's reply text (the buddy's last text message in the step)."""

    equals: str | None = Field(default=None, description="The whole reply, exactly.")
    contains: Text | list[Text] | None = Field(
        default=None, description="Text(s) the reply contains."
    )
    matches: Regex | None = Field(
        default=None, description="A regular expression (Python syntax) found in the reply."
    )


ReplyExpect = Annotated[
    Annotated[str, Tag("text")] | Annotated[ReplyCheck, Tag("mapping")],
    Discriminator(text_or_mapping),
]


class CalledCheck(Strict):
    """A tool the model called in this step, with (a subset of) its arguments."""

    name: ToolName
    args: Data | None = Field(
        default=None, description="Arguments the call had (a subset: other keys may be there)."
    )


CalledItem = Annotated[
    Annotated[ToolName, Tag("text")] | Annotated[CalledCheck, Tag("mapping")],
    Discriminator(text_or_mapping),
]
CalledExpect = Annotated[
    Annotated[ToolName, Tag("text")]
    | Annotated[CalledCheck, Tag("mapping")]
    | Annotated[list[CalledItem], Tag("list")],
    Discriminator(shape),
]


class ResultCheck(Strict):
    """A result a tool gave in this step (what the model read)."""

    tool: ToolName
    contains: Text | None = Field(default=None, description="Text the result contains.")
    error: bool | None = Field(default=None, description="Whether it is an error result.")


ResultExpect = Annotated[
    Annotated[ResultCheck, Tag("mapping")] | Annotated[list[ResultCheck], Tag("list")],
    Discriminator(mapping_or_list),
]


class DeniedCheck(Strict):
    """A tool call a ``before_tool_call`` hook refused in this step."""

    tool: ToolName
    reason: Text | None = Field(default=None, description="Text the denial reason contains.")


DeniedItem = Annotated[
    Annotated[ToolName, Tag("text")] | Annotated[DeniedCheck, Tag("mapping")],
    Discriminator(text_or_mapping),
]
DeniedExpect = Annotated[
    Annotated[ToolName, Tag("text")]
    | Annotated[DeniedCheck, Tag("mapping")]
    | Annotated[list[DeniedItem], Tag("list")],
    Discriminator(shape),
]


class QuestionCheck(Strict):
    """The question card sent in this step."""

    text: Text | None = Field(default=None, description="The question, exactly.")
    options: list[Text] | None = Field(default=None, description="The options, in order.")


class PromptCheck(Strict):
    """The system prompt of the step's last model request: what it holds, what it does not."""

    contains: Text | list[Text] | None = Field(
        default=None, description="Text(s) the system prompt contains."
    )
    not_contains: Text | list[Text] | None = Field(
        default=None, description="Text(s) the system prompt does not contain."
    )


class CoreExpect(Strict):
    """What must hold after a step. Every key is optional; all given must hold. The
    format's own keys; :func:`expect_model` adds each capability's
    (:class:`~buddy.extend.StepExpect`)."""

    reply: ReplyExpect | None = Field(
        default=None,
        description="The buddy's last text reply in this step: the exact text, or "
        "`{equals, contains, matches}`.",
    )
    no_reply: bool | None = Field(
        default=None,
        description="`true`: the users received nothing in this step (e.g. a skipped "
        "proactive turn); `false`: they received something.",
    )
    messages: int | None = Field(
        default=None, ge=0, description="How many messages the users received in this step."
    )
    tool_called: CalledExpect | None = Field(
        default=None, description="Tools the model called in this step (with argument subsets)."
    )
    tool_result: ResultExpect | None = Field(
        default=None, description="Results tools gave in this step."
    )
    denied: DeniedExpect | None = Field(
        default=None, description="Tool calls a `before_tool_call` hook refused in this step."
    )
    question: QuestionCheck | None = Field(
        default=None, description="The question card sent in this step."
    )
    prompt: PromptCheck | None = Field(
        default=None,
        description="The system prompt of the step's last model request — what the model "
        "was given, with every declared part where it landed: `{contains, not_contains}`.",
    )


def expect_model() -> type[CoreExpect]:
    """``expect:``'s model: the format's own keys, then each registered capability's, in
    registry order."""
    from buddy.extend import step_expects

    return _composed_expect(step_expects())


@cache
def _composed_expect(expects: tuple[StepExpect, ...]) -> type[CoreExpect]:
    fields: dict[str, Any] = {
        e.key: (resolve(e.model) | None, Field(default=None, description=e.description))
        for e in expects
    }
    model: type[CoreExpect] = create_model(
        "Expect",
        __base__=CoreExpect,
        __doc__="What must hold after a step. Every key is optional; all given must hold.",
        **fields,
    )
    return model
