"""The checks of a scenario file beyond its models: the rules that relate parts of a
scenario (unique names, members, a model script only where a turn starts, placeholders
of earlier results) and the ones that need the buddy (its tools; each capability's own,
a :class:`~buddy.extend.StepAction` or ``StepExpect`` ``check`` given a
:class:`buddy.testing.parts.StepCheck`). They run on every scenario and step that is
valid by itself, so one reading reports every problem it can find
(:func:`buddy.testing.scenario_format.read_suite`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from buddy.compile.blueprint import Blueprint
from buddy.errors import Issue
from buddy.extend import resolve, step_actions, step_expects
from buddy.manifest.locate import issue_at, loc_of
from buddy.manifest.schema import did_you_mean
from buddy.manifest.yamlio import Document, YamlPath
from buddy.testing.expectation_models import CoreExpect
from buddy.testing.expectations import items_of
from buddy.testing.scenario_models import (
    DEFAULT_MEMBER,
    MEMBER_ACTIONS,
    PLACEHOLDER,
    ConversationRef,
    ConversationSpec,
    CoreStep,
    ModelTurn,
    actions,
    calls_of,
    modifiers,
    step_model,
    turn_actions,
)

__all__ = ["check_scenarios"]


def check_scenarios(
    doc: Document, blueprint: Blueprint | None, items: Any, base: YamlPath
) -> list[Issue]:
    """Check the scenarios of a file, each as far as it is valid by itself.

    Args:
        doc: The located YAML.
        blueprint: The buddy the scenarios run against; ``None`` checks the format only.
        items: What the file has under ``scenarios:`` (anything: only a list is checked).
        base: The YAML path of that list.
    """
    checker = _Checker(doc, blueprint)
    for index, item in enumerate(items if isinstance(items, list) else []):
        partial = _Partial.of(item)
        if partial is not None:
            checker.scenario((*base, index), partial)
    return checker.issues


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


def _walk_strings(value: Any, path: YamlPath) -> Iterator[tuple[YamlPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk_strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk_strings(item, (*path, index))


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
            for item_path, item in items_of((*path, name), value):
                if isinstance(item, str):
                    self._tool(item_path, item)
                else:
                    field_name = "name" if name == "tool_called" else "tool"
                    self._tool((*item_path, field_name), getattr(item, field_name))
        for part in self.expects:
            value = getattr(expect, part.key, None)
            if value is not None and part.check:
                resolve(part.check)(value, (*path, part.key), self)
