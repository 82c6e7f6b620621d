"""The scenario file format's models: what a scenario author writes, and its JSON Schema.

A scenario file is a list of scenarios, or a mapping with ``scenarios:``. A scenario is a
conversation (private, or a group with members by name) and its steps; a step does one
thing, with the scripted model responses for the turns it starts, then checks what must
hold (``expect:``, see :mod:`buddy.testing.expectation_models`). The format's own words
are here (``user``, ``click``, ``advance``, the model script); each capability adds its
own in its ``scenario.py`` (:class:`~buddy.extend.StepAction`, ``StepExpect``), composed
into the models by :func:`step_model`. The JSON Schema of the format
(``docs/scenario.schema.json``) is generated from these models. Reading a file with
located errors is :mod:`buddy.testing.scenario_format`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    create_model,
)
from pydantic_core import PydanticCustomError

from buddy.extend import StepAction, resolve, step_actions
from buddy.manifest.schema import DURATION_PATTERN
from buddy.manifest.schema import duration_seconds as spans
from buddy.manifest.yamlio import YamlPath
from buddy.testing.expectation_models import (
    CoreExpect,
    Data,
    Strict,
    Text,
    ToolName,
    expect_model,
    text_or_mapping,
)

__all__ = [
    "CLOCK_TIMEZONE",
    "DEFAULT_CLOCK",
    "DEFAULT_MEMBER",
    "MEMBER_ACTIONS",
    "PLACEHOLDER",
    "SCHEMA_ID",
    "CallScript",
    "ConversationRef",
    "ConversationSpec",
    "CoreScenario",
    "CoreStep",
    "ModelTurn",
    "ToolCallSpec",
    "actions",
    "calls_of",
    "duration_seconds",
    "file_model",
    "modifiers",
    "scenario_json_schema",
    "scenario_model",
    "schema_text",
    "step_model",
    "turn_actions",
]

SCHEMA_ID = "https://buddy.dev/schema/scenario.schema.json"
DEFAULT_MEMBER = "我"
DEFAULT_CLOCK = "12:00"
CLOCK_TIMEZONE = "Asia/Shanghai"
MEMBER_ACTIONS = frozenset({"user", "click"})
"""The format's own actions of one member (``as:`` says who); ``advance`` is its other."""

_TIME_RE = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}")


# ---------------------------------------------------------------- the format


def _check_duration(value: str) -> str:
    if spans(value) == 0:
        raise PydanticCustomError(
            "duration",
            "`{value}` is not a duration: write e.g. 2h, 90m, 1h30m, 45s, 1d, or a number "
            "of seconds",
            {"value": value},
        )
    return value


def duration_seconds(value: str | int) -> int:
    """Seconds of an ``advance:`` value: ``2h``, ``90m``, ``1h30m``, ``45s``, ``1d`` or an int.

    Raises:
        ValueError: Not a duration.
    """
    if isinstance(value, int):
        return value
    seconds = spans(value)
    if seconds == 0:
        raise ValueError(f"not a duration: {value!r}")
    return seconds


def _check_time(value: str) -> str:
    if not _TIME_RE.match(value):
        raise PydanticCustomError(
            "time-format", "`{value}` is not a time of day `HH:MM` (00:00–23:59)", {"value": value}
        )
    return value


def _duration_tag(value: Any) -> str:
    return "text" if isinstance(value, str) else "seconds"


Duration = Annotated[
    Annotated[
        str,
        Field(json_schema_extra={"pattern": DURATION_PATTERN}),
        AfterValidator(_check_duration),
        Tag("text"),
    ]
    | Annotated[int, Field(ge=1), Tag("seconds")],
    Discriminator(_duration_tag),
    Field(
        description="How far to move the platform clock: `2h`, `90m`, `1h30m`, `45s`, `1d`, "
        "or seconds."
    ),
]
TimeOfDay = Annotated[
    str, Field(json_schema_extra={"pattern": _TIME_RE.pattern}), AfterValidator(_check_time)
]


class ToolCallSpec(Strict):
    """One tool call of a scripted model response."""

    call: ToolName = Field(description="The tool's name.")
    args: Data = Field(
        default_factory=dict,
        description="The arguments. A string `{{ tool.path }}` is replaced by a value of the "
        "latest earlier result of that tool (read as JSON), e.g. `{{ a_tool.id }}` is the "
        "`id` of a_tool's last result.",
    )


CallItem = Annotated[
    Annotated[ToolName, Tag("text")] | Annotated[ToolCallSpec, Tag("mapping")],
    Discriminator(text_or_mapping),
]


class ModelTurn(Strict):
    """One scripted model response: text, reasoning, tool calls, or a proactive skip."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "anyOf": [
                {"required": ["say"]},
                {"required": ["call"]},
                {"required": ["calls"]},
                {"required": ["skip"]},
            ],
            "not": {"required": ["call", "calls"]},
            "dependentRequired": {"args": ["call"]},
        },
    )

    say: Text | None = Field(default=None, description="The reply text (or text before calls).")
    think: Text | None = Field(default=None, description="Reasoning text (never shown).")
    skip: Literal[True] | None = Field(
        default=None, description="A proactive turn's skip: the model outputs the skip marker."
    )
    call: ToolName | None = Field(default=None, description="Call this tool.")
    args: Data | None = Field(default=None, description="The arguments of `call`.")
    calls: list[CallItem] | None = Field(
        default=None, min_length=1, description="Several tool calls in one response."
    )


ModelItem = Annotated[
    Annotated[Text, Tag("text")] | Annotated[ModelTurn, Tag("mapping")],
    Discriminator(text_or_mapping),
]


def actions() -> tuple[str, ...]:
    """A step's actions, of which a step has at most one: ``user``, ``click``, each
    registered capability's (:class:`~buddy.extend.StepAction`), ``advance``."""
    own = (a.key for a in step_actions() if not a.modifies)
    return ("user", "click", *own, "advance")


def modifiers() -> tuple[StepAction, ...]:
    """The capabilities' step keys that go with an action (``StepAction.modifies``)."""
    return tuple(a for a in step_actions() if a.modifies)


def turn_actions() -> frozenset[str]:
    """The actions that can start a turn, and so take scripted ``model:`` responses."""
    turning = (a.key for a in step_actions() if a.turn and not a.modifies)
    return frozenset({"user", "click", "advance", *turning})


def _one_action(schema: dict[str, Any]) -> None:
    keys = actions()
    schema["oneOf"] = [
        *({"required": [action]} for action in keys),
        {"not": {"anyOf": [{"required": [action]} for action in keys]}, "required": ["expect"]},
    ]


class CoreStep(Strict):
    """One step: at most one action, scripted model responses, and expectations. The
    format's own actions; :func:`step_model` adds each capability's."""

    model_config = ConfigDict(
        strict=True, extra="forbid", frozen=True, json_schema_extra=_one_action
    )

    user: Text | None = Field(default=None, description="A user writes this.")
    as_: Text | None = Field(
        default=None,
        alias="as",
        description="Who writes or clicks (a member's name); required in a group.",
    )
    click: Text | None = Field(
        default=None, description="Click this option of the last question card."
    )
    advance: Duration | None = Field(
        default=None, description="Move the platform clock (due schedules fire)."
    )
    model: list[ModelItem] | None = Field(
        default=None,
        description="The scripted model responses for the turns this step starts, in order "
        "(a text is a reply). Ignored with `buddy test --model`.",
    )
    expect: CoreExpect | None = Field(default=None, description="What must hold after the step.")

    @property
    def action(self) -> str | None:
        """The step's action, or ``None`` for a step that only checks."""
        return next((a for a in actions() if getattr(self, a, None) is not None), None)


def step_model() -> type[CoreStep]:
    """A step's model: the format's own keys, each registered capability's actions, and
    ``expect:`` with every registered expectation (:func:`expect_model`)."""
    return _composed_step(step_actions(), expect_model())


@cache
def _composed_step(found: tuple[StepAction, ...], expect: type[CoreExpect]) -> type[CoreStep]:
    fields: dict[str, Any] = {
        a.key: (resolve(a.model) | None, Field(default=None, description=a.description))
        for a in found
    }
    fields["expect"] = (
        expect | None,
        Field(default=None, description="What must hold after the step."),
    )
    model: type[CoreStep] = create_model(
        "Step",
        __base__=CoreStep,
        __doc__="One step: at most one action, scripted model responses, and expectations.",
        **fields,
    )
    return model


class ConversationSpec(Strict):
    """The scenario's conversation."""

    kind: Literal["private", "group"] = "private"
    members: list[Text] | None = Field(
        default=None,
        min_length=1,
        description=f"Member names (a private chat has one; default `{DEFAULT_MEMBER}`).",
    )


ConversationRef = Annotated[
    Annotated[Literal["private", "group"], Tag("text")]
    | Annotated[ConversationSpec, Tag("mapping")],
    Discriminator(text_or_mapping),
]


class CoreScenario(Strict):
    """A conversation scripted step by step (:func:`scenario_model` gives its steps every
    registered action and expectation)."""

    name: str = Field(min_length=1, max_length=200, description="Shown in reports; unique.")
    description: str | None = None
    conversation: ConversationRef = Field(
        default="private",
        description="`private` (one member, `我`), or `{kind: group, members: [names]}`.",
    )
    clock: TimeOfDay = Field(
        default=DEFAULT_CLOCK,
        description=f"The scenario starts at the next HH:MM ({CLOCK_TIMEZONE}) on the "
        "platform clock, so quiet hours do not depend on when it runs.",
    )
    steps: list[CoreStep] = Field(min_length=1)

    @property
    def kind(self) -> str:
        """``private`` or ``group``."""
        return self.conversation if isinstance(self.conversation, str) else self.conversation.kind

    @property
    def members(self) -> list[str]:
        """Member names, in order."""
        spec = self.conversation
        if isinstance(spec, ConversationSpec) and spec.members:
            return list(spec.members)
        return [DEFAULT_MEMBER]


def scenario_model() -> type[CoreScenario]:
    """A scenario's model, with the composed steps (:func:`step_model`)."""
    return _composed_scenario(step_model())


@cache
def _composed_scenario(step: type[CoreStep]) -> type[CoreScenario]:
    model: type[CoreScenario] = create_model(
        "Scenario",
        __base__=CoreScenario,
        __doc__="A conversation scripted step by step.",
        steps=(list[step], Field(min_length=1)),  # type: ignore[valid-type]
    )
    return model


def file_model() -> type[BaseModel]:
    """A scenario file's model: ``tests/*.yaml`` next to a buddy's ``buddy.yaml``."""
    return _composed_file(scenario_model())


@cache
def _composed_file(scenario: type[CoreScenario]) -> type[BaseModel]:
    model: type[BaseModel] = create_model(
        "ScenarioFile",
        __config__=ConfigDict(strict=True, extra="forbid", frozen=True, title="scenario file"),
        __doc__="A scenario file: ``tests/*.yaml`` next to a buddy's ``buddy.yaml``.",
        scenarios=(list[scenario], Field(min_length=1)),  # type: ignore[valid-type]
    )
    return model


# ---------------------------------------------------------------- the JSON Schema


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema of scenario files (a mapping with ``scenarios:``, or a list)."""
    scenario = scenario_model()
    schema = TypeAdapter(file_model() | list[scenario]).json_schema(  # type: ignore[valid-type, arg-type]
        mode="validation"
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "buddy scenario file (tests/*.yaml)",
        **schema,
    }


def schema_text() -> str:
    """The JSON Schema as committed in ``docs/scenario.schema.json``."""
    return json.dumps(scenario_json_schema(), ensure_ascii=False, indent=2) + "\n"


# ---------------------------------------------------------------- scripted calls


@dataclass(frozen=True, slots=True)
class CallScript:
    """A scripted tool call: the tool, its (unresolved) arguments, and where both are written."""

    tool: str
    args: dict[str, Any]
    tool_at: YamlPath
    args_at: YamlPath


def calls_of(turn: str | ModelTurn, path: YamlPath) -> list[CallScript]:
    """The tool calls of a scripted response."""
    if isinstance(turn, str):
        return []
    if turn.call is not None:
        return [CallScript(turn.call, dict(turn.args or {}), (*path, "call"), (*path, "args"))]
    calls: list[CallScript] = []
    for index, item in enumerate(turn.calls or []):
        at = (*path, "calls", index)
        if isinstance(item, str):
            calls.append(CallScript(item, {}, at, at))
        else:
            calls.append(CallScript(item.call, dict(item.args), (*at, "call"), (*at, "args")))
    return calls
