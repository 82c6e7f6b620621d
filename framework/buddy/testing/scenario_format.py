"""The scenario file format: what a scenario author writes, read with located errors.

A scenario file is ``tests/*.yaml`` inside a buddy's directory: a list of scenarios, or a
mapping with ``scenarios:``. A scenario is a conversation (private, or a group with
members by name) and its steps. A step does one thing — a user writes, clicks a question
option, answers a consent card, the world grants or changes data, fires a trigger, moves
the clock — with the scripted model responses for the turns it starts, then checks what
must hold (``expect:``, see :mod:`buddy.testing.expectations`). The format's own words
are here (``user``, ``click``, ``advance``, the model script); each capability adds its
own in its ``scenario.py`` (:class:`~buddy.extend.StepAction`, ``StepExpect``:
``consent``, ``grant``, ``trigger``, ``widget``, ``memory`` …), composed into the models
by :func:`step_model`.

:func:`read_suite` reports every mistake as an :class:`~buddy.errors.Issue` with its
file, line and column, like ``buddy validate``: the format's own rules (pydantic, strict)
and the rules that need the buddy (its tools, datasets, widget types). The JSON Schema of
the format (``docs/scenario.schema.json``) is generated from these models.

The models and the schema are in :mod:`buddy.testing.scenario_models`, the checks beyond
the models in :mod:`buddy.testing.scenario_checks`; this module reads a file, and its
names include the models', so it is the one import of the format a caller needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from buddy.compile.blueprint import Blueprint
from buddy.errors import Issue
from buddy.manifest.locate import issues_from_validation
from buddy.manifest.yamlio import Document, YamlPath, load_document
from buddy.testing.scenario_checks import check_scenarios
from buddy.testing.scenario_models import (
    CLOCK_TIMEZONE,
    DEFAULT_CLOCK,
    DEFAULT_MEMBER,
    PLACEHOLDER,
    SCHEMA_ID,
    CallScript,
    ConversationSpec,
    CoreScenario,
    CoreStep,
    ModelTurn,
    ToolCallSpec,
    actions,
    calls_of,
    duration_seconds,
    file_model,
    scenario_json_schema,
    scenario_model,
    schema_text,
    step_model,
    turn_actions,
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

# Our own error codes, raised from the models' validators (pydantic's types are mapped by
# buddy.manifest.locate, which does not know these).
_OWN_CODES = frozenset({"duration", "regex", "time-format"})


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
    checked = check_scenarios(doc, blueprint, wrapped.get("scenarios"), base)
    issues = sorted(set(issues + checked), key=lambda i: (i.line, i.column, i.code, i.message))
    if parsed is None or issues:
        return Suite(file, doc, issues=issues)
    return Suite(file, doc, [((*base, i), s) for i, s in enumerate(parsed.scenarios)])


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
