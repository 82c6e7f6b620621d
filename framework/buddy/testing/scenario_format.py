"""The scenario file format: what a scenario author writes, read with located errors.

A scenario file is ``tests/*.yaml`` inside a buddy's directory: a list of scenarios, or a
mapping with ``scenarios:``. A scenario is a conversation (private, or a group with
members by name) and its steps. A step does one thing — a user writes, clicks a question
option, answers a consent card, the world grants or changes data, fires a trigger, moves
the clock — with the scripted model responses for the turns it starts, then checks what
must hold (``expect:``, see :mod:`buddy.testing.expectations`). The format's own words
are here (``user``, ``click``, ``advance``, the model script); each capability adds its
own in its ``scenario.py`` (:class:`~buddy.capabilities.StepAction`, ``StepExpect``:
``consent``, ``grant``, ``trigger``, ``widget``, ``memory`` …), composed into the models
by :func:`step_model`.

:func:`read_suite` reports every mistake as an :class:`~buddy.errors.Issue` with its
file, line and column, like ``buddy validate``: the format's own rules (pydantic, strict)
and the rules that need the buddy (its tools, datasets, widget types). The JSON Schema of
the format (``docs/scenario.schema.json``) is generated from these models.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    create_model,
)
from pydantic_core import PydanticCustomError

from buddy.capabilities import StepAction, resolve, step_actions, step_expects
from buddy.compile.blueprint import Blueprint
from buddy.errors import Issue
from buddy.manifest.locate import issue_at, issues_from_validation, loc_of
from buddy.manifest.schema import DURATION_PATTERN, did_you_mean
from buddy.manifest.schema import duration_seconds as spans
from buddy.manifest.yamlio import Document, YamlPath, load_document
from buddy.testing.expectations import (
    CoreExpect,
    Data,
    Strict,
    Text,
    ToolName,
    expect_model,
    text_or_mapping,
)

__all__ = [
    "ACTIONS",  # noqa: F822 (made on first use, by __getattr__)
    "CLOCK_TIMEZONE",
    "DEFAULT_CLOCK",
    "DEFAULT_MEMBER",
    "PLACEHOLDER",
    "SCHEMA_ID",
    "CallScript",
    "ConversationSpec",
    "CoreScenario",
    "CoreStep",
    "ModelTurn",
    "Scenario",  # noqa: F822 (made on first use, by __getattr__)
    "ScenarioFile",  # noqa: F822 (made on first use, by __getattr__)
    "Step",  # noqa: F822 (made on first use, by __getattr__)
    "Suite",
    "ToolCallSpec",
    "actions",
    "calls_of",
    "duration_seconds",
    "read_suite",
    "scenario_json_schema",
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

# Our own error codes, raised from validators below (pydantic's types are mapped by
# buddy.manifest.locate, which does not know these).
_OWN_CODES = frozenset({"duration", "regex", "time-format"})


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
    registered capability's (:class:`~buddy.capabilities.StepAction`), ``advance``."""
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


def __getattr__(name: str) -> Any:
    # The composed models and the action names depend on the registered capabilities:
    # made on first use, so a capability registered by then is in them.
    made = {
        "Step": step_model,
        "Scenario": scenario_model,
        "ScenarioFile": file_model,
        "ACTIONS": actions,
    }
    if name in made:
        return made[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


# ---------------------------------------------------------------- reading a file


@dataclass
class Suite:
    """A scenario file, read and checked.

    Attributes:
        file: The file as shown in reports.
        doc: The located YAML, or ``None`` when it could not be parsed.
        scenarios: Each scenario with its YAML path; empty when the file has issues.
        issues: Every problem found, located.
    """

    file: str
    doc: Document | None
    scenarios: list[tuple[YamlPath, CoreScenario]] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)


def _parse(path: Path, file: str) -> Document | Issue:
    """Like :func:`~buddy.manifest.yamlio.load_document`, with a top-level list allowed."""
    loaded = load_document(path, file, allow_list=True)
    if not isinstance(loaded, Issue) or loaded.code != "yaml-not-mapping":
        return loaded
    if loaded.message == "the file is empty":
        return Issue(
            file=loaded.file,
            line=loaded.line,
            column=loaded.column,
            path="",
            code=loaded.code,
            message=loaded.message,
            hint="write a list of scenarios",
        )
    return Issue(
        file=loaded.file,
        line=loaded.line,
        column=loaded.column,
        path="",
        code=loaded.code,
        message="a scenario file is a list of scenarios, or a mapping with `scenarios:`",
    )


def read_suite(
    path: Path, blueprint: Blueprint | None = None, *, display: str | None = None
) -> Suite:
    """Read, validate and check a scenario file (never raises for bad input).

    Args:
        path: The file.
        blueprint: The buddy the scenarios run against: tool names, datasets and widget
            types are checked against it. ``None`` checks the format only.
        display: How to show the file in issues (default: ``path`` as given).
    """
    file = display or str(path)
    loaded = _parse(path, file)
    if isinstance(loaded, Issue):
        return Suite(file, None, issues=[loaded])
    doc = loaded
    wrapped = doc.data if isinstance(doc.data, dict) else {"scenarios": doc.data}
    issues: list[Issue] = []
    try:
        parsed: Any = file_model().model_validate(wrapped)
    except ValidationError as exc:
        parsed = None
        issues.extend(_located(doc, exc))
    # The rules between parts, and against the buddy, run on every scenario and step that
    # is valid by itself, so one run reports every problem it can find.
    base: YamlPath = ("scenarios",) if isinstance(doc.data, dict) else ()
    checker = _Checker(doc, blueprint)
    items = wrapped.get("scenarios")
    for index, item in enumerate(items if isinstance(items, list) else []):
        partial = _Partial.of(item)
        if partial is not None:
            checker.scenario((*base, index), partial)
    issues = sorted(
        set(issues + checker.issues), key=lambda i: (i.line, i.column, i.code, i.message)
    )
    if parsed is None or issues:
        return Suite(file, doc, issues=issues)
    return Suite(file, doc, [((*base, i), s) for i, s in enumerate(parsed.scenarios)])


_CONVERSATION: TypeAdapter[str | ConversationSpec] = TypeAdapter(ConversationRef)


@dataclass
class _Partial:
    """What validated of a scenario: its name, conversation and valid steps (by index)."""

    name: str | None
    kind: str | None
    members: list[str] | None
    conversation: str | ConversationSpec | None
    steps: list[tuple[int, CoreStep]]

    @classmethod
    def of(cls, item: Any) -> _Partial | None:
        if not isinstance(item, dict):
            return None
        name = item.get("name") if isinstance(item.get("name"), str) else None
        try:
            conversation = _CONVERSATION.validate_python(item.get("conversation", "private"))
        except ValidationError:
            conversation = None
        kind = members = None
        if conversation is not None:
            kind = conversation if isinstance(conversation, str) else conversation.kind
            spec_members = None if isinstance(conversation, str) else conversation.members
            members = list(spec_members) if spec_members else [DEFAULT_MEMBER]
        steps: list[tuple[int, CoreStep]] = []
        step = step_model()
        raw_steps = item.get("steps")
        for index, raw in enumerate(raw_steps if isinstance(raw_steps, list) else []):
            with contextlib.suppress(ValidationError):
                steps.append((index, step.model_validate(raw)))
        return cls(name, kind, members, conversation, steps)


def _located(doc: Document, error: ValidationError) -> list[Issue]:
    issues = issues_from_validation(doc, error, file_model())
    out: list[Issue] = []
    for issue, detail in zip(issues, error.errors(include_url=False), strict=True):
        code = detail["type"] if detail["type"] in _OWN_CODES else issue.code
        # `as` is a Python keyword: the field is `as_` inside, `as` in the file.
        hint = re.sub(r"\bas_\b", "as", issue.hint)
        message = re.sub(r"\bas_\b", "as", issue.message)
        out.append(
            Issue(
                file=issue.file,
                line=issue.line,
                column=issue.column,
                path=issue.path,
                code=code,
                message=message,
                hint=hint,
            )
        )
    return sorted(set(out), key=lambda i: (i.line, i.column, i.code, i.message))


def _walk_strings(value: Any, path: YamlPath) -> Iterator[tuple[YamlPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk_strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk_strings(item, (*path, index))


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


class _Checker:
    """The rules that relate parts of a scenario, and the ones that need the buddy (a
    :class:`buddy.testing.parts.StepCheck` for the capabilities' checks)."""

    def __init__(self, doc: Document, blueprint: Blueprint | None) -> None:
        self.doc = doc
        self.blueprint = blueprint
        self.issues: list[Issue] = []
        self.names: dict[str, YamlPath] = {}
        self.tools = [t.name for t in blueprint.tools] if blueprint else None
        self.kind: str | None = None
        self.members: list[str] | None = None
        self.actions = {a.key: a for a in step_actions()}
        self.expects = step_expects()

    def issue(
        self, path: YamlPath, code: str, message: str, hint: str = "", *, key: bool = False
    ) -> None:
        self.issues.append(issue_at(self.doc, path, code, message, hint, key=key))

    def scenario(self, path: YamlPath, scenario: _Partial) -> None:
        if scenario.name is not None:
            if scenario.name in self.names:
                first = loc_of(self.doc, (*self.names[scenario.name], "name"))
                self.issue(
                    (*path, "name"),
                    "duplicate-name",
                    f"another scenario is named {scenario.name!r} (line {first.line})",
                    "give every scenario of a file its own name",
                )
            self.names.setdefault(scenario.name, path)
        self.kind, self.members = scenario.kind, scenario.members
        self._conversation(path, scenario)
        called: set[str] = set()  # tools called by earlier scripted responses
        for index, step in scenario.steps:
            self._step((*path, "steps", index), step, scenario, called)

    def _conversation(self, path: YamlPath, scenario: _Partial) -> None:
        spec = scenario.conversation
        where: YamlPath = (*path, "conversation")
        if scenario.kind == "group" and (isinstance(spec, str) or not spec or not spec.members):
            self.issue(
                where,
                "conversation",
                "a group conversation needs its members",
                "write `conversation: {kind: group, members: [小李, 小王]}`",
            )
        if isinstance(spec, ConversationSpec) and spec.members:
            if spec.kind == "private" and len(spec.members) > 1:
                self.issue(
                    (*where, "members"),
                    "conversation",
                    f"a private conversation has one member, not {len(spec.members)}",
                    "use `kind: group` for several members",
                )
            seen: set[str] = set()
            for index, name in enumerate(spec.members):
                if name in seen:
                    self.issue(
                        (*where, "members", index),
                        "conversation",
                        f"the member {name!r} is listed twice",
                    )
                seen.add(name)

    def member(self, path: YamlPath, name: str | None) -> None:
        if name is not None and self.members is not None and name not in self.members:
            guess = did_you_mean(name, self.members)
            self.issue(
                path,
                "member-unknown",
                f"{name!r} is not a member of this conversation",
                guess or f"members: {', '.join(self.members)}",
            )

    def _step(self, path: YamlPath, step: CoreStep, scenario: _Partial, called: set[str]) -> None:
        every = actions()
        actions_here = [a for a in every if getattr(step, a, None) is not None]
        group = scenario.kind == "group"
        if len(actions_here) > 1:
            self.issue(
                (*path, actions_here[1]),
                "step-kind",
                f"a step does one thing: `{actions_here[0]}` and `{actions_here[1]}` are both here",
                "split them into two steps",
                key=True,
            )
        action = actions_here[0] if actions_here else None
        if action is None and step.expect is None:
            self.issue(
                path,
                "step-kind",
                "a step needs an action (" + ", ".join(f"`{a}`" for a in every) + ") or `expect:`",
            )
        if step.as_ is not None:
            if action not in MEMBER_ACTIONS:
                self.issue(
                    (*path, "as"),
                    "step-kind",
                    "`as` says who writes or clicks: use it with `user` or `click`",
                    key=True,
                )
            else:
                self.member((*path, "as"), step.as_)
        elif group and action in MEMBER_ACTIONS:
            self.issue(
                (*path, action),
                "member-required",
                "in a group, say who writes: add `as:` with a member's name",
                f"members: {', '.join(scenario.members or [])}",
                key=True,
            )
        part = self.actions.get(action) if action is not None else None
        if part is not None and part.check:
            resolve(part.check)(getattr(step, part.key), (*path, part.key), self)
        for extra in modifiers():
            value = getattr(step, extra.key, None)
            if value is None:
                continue
            if action not in turn_actions():
                what = f"`{action}`" if action else "a step without an action"
                self.issue(
                    (*path, extra.key),
                    "model-without-turn",
                    f"{what} starts no turn, so `{extra.key}` has nothing to go with",
                    f"put `{extra.key}:` on the step that makes the buddy answer",
                    key=True,
                )
            if extra.check:
                resolve(extra.check)(value, (*path, extra.key), self)
        if step.model is not None:
            if action not in turn_actions():
                what = f"`{action}`" if action else "a step without an action"
                self.issue(
                    (*path, "model"),
                    "model-without-turn",
                    f"{what} starts no turn, so it has no model responses",
                    "put `model:` on the step that makes the buddy answer",
                    key=True,
                )
            for index, turn in enumerate(step.model):
                self._turn((*path, "model", index), turn, called)
        if step.expect is not None:
            self._expect((*path, "expect"), step.expect)

    def _turn(self, path: YamlPath, turn: str | ModelTurn, called: set[str]) -> None:
        if isinstance(turn, ModelTurn):
            if turn.say is None and turn.call is None and turn.calls is None and turn.skip is None:
                self.issue(
                    path,
                    "model-turn",
                    "a model response says something (`say`), calls tools (`call`, `calls`) or "
                    "skips (`skip: true`)",
                )
            if turn.call is not None and turn.calls is not None:
                self.issue(
                    (*path, "calls"),
                    "model-turn",
                    "use `call` for one tool or `calls` for several, not both",
                    key=True,
                )
            if turn.args is not None and turn.call is None:
                self.issue(
                    (*path, "args"),
                    "model-turn",
                    "`args` belong to `call`",
                    "add `call: TOOL`",
                    key=True,
                )
            if turn.skip and (
                turn.say is not None or turn.call is not None or turn.calls is not None
            ):
                self.issue(
                    (*path, "skip"), "model-turn", "a skip says nothing and calls nothing", key=True
                )
        calls = calls_of(turn, path)
        for call in calls:
            self._tool(call.tool_at, call.tool)
            for where, text in _walk_strings(call.args, call.args_at):
                for match in PLACEHOLDER.finditer(text):
                    if match.group(1) not in called:
                        self.issue(
                            where,
                            "placeholder",
                            f"`{match.group(0)}` needs a result of {match.group(1)}, but no "
                            "earlier model response calls it",
                            "placeholders read results of tools called in earlier responses",
                        )
        called.update(call.tool for call in calls)

    def _tool(self, path: YamlPath, name: str) -> None:
        if self.tools is not None and name not in self.tools:
            owner = self.blueprint.name if self.blueprint else "the buddy"
            self.issue(
                path,
                "unknown-tool",
                f"{owner} has no tool `{name}`",
                did_you_mean(name, self.tools) or f"tools: {', '.join(self.tools)}",
            )

    def _expect(self, path: YamlPath, expect: CoreExpect) -> None:
        if expect.no_reply and expect.reply is not None:
            self.issue(
                (*path, "no_reply"),
                "expect-conflict",
                "`no_reply: true` and `reply` cannot both hold",
                key=True,
            )
        for name in ("tool_called", "denied", "tool_result"):
            value = getattr(expect, name)
            if value is None:
                continue
            for item_path, item in _each((*path, name), value):
                if isinstance(item, str):
                    self._tool(item_path, item)
                else:
                    field_name = "name" if name == "tool_called" else "tool"
                    self._tool((*item_path, field_name), getattr(item, field_name))
        for part in self.expects:
            value = getattr(expect, part.key, None)
            if value is not None and part.check:
                resolve(part.check)(value, (*path, part.key), self)


def _each(path: YamlPath, value: Any) -> Iterator[tuple[YamlPath, Any]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield (*path, index), item
    else:
        yield path, value
