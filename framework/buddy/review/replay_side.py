"""One side of a replay (``buddy diff --replay``), run in a process of its own: the
scenarios of the buddies a change touches, each step traced as plain text.

A side runs its scenarios as ``buddy test`` does — the scripted model responses, the
extractor's scripted answers, a fresh dev platform in this process over an in-memory
database — so nothing reaches a real model or the network; with a
:class:`~buddy.testing.scenarios.StepWatch` that traces each step (:class:`StepTrace`)
and lets the run go on after a failing step. What a trace holds is text that crosses
processes and compares equal between two sides that behave alike: the ids the platform
makes at random are masked and instants in results are cut to the minute.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from buddy.review.diff import Side, _relocate

if TYPE_CHECKING:
    from buddy.errors import Issue
    from buddy.testing.parts import StepRun
    from buddy.testing.scenario_format import Suite
    from buddy.testing.scenarios import StepDone

__all__ = [
    "BuddyTrace",
    "ScenarioTrace",
    "SideJob",
    "StepTrace",
    "run_side",
    "scenario_files",
    "warm",
]

SCENARIO_GLOBS = ("*.yaml", "*.yml")
#: Ids the dev platform makes at random (``msg_`` + 20 hex digits): equal on both sides.
_RANDOM_ID = re.compile(r"\b([a-z]+)_[0-9a-f]{20}\b")
#: Platform instants in results (``created_at``): the clocks start alike, then run with
#: the machine's, so both sides agree to the minute, not to the microsecond.
_INSTANT = re.compile(r"\b1\d{9}\.\d+\b")


@dataclass(frozen=True, slots=True)
class StepTrace:
    """What one step did on one side (plain text, so it crosses processes).

    Attributes:
        index: The step's index in its scenario.
        line: Where it is written.
        label: Its action as written (``user: 你烦不烦啊``, ``advance: 3h``).
        requests: How many model requests it made.
        system: The system prompt of its last request (``""``: none).
        injected: The messages layers put into that request's history, one a line.
        tools: The tools that request offered: name, description, parameters.
        exchange: Calls, results and the buddy's messages, in order, one a line.
        state: What each capability shows after the step, ``(label, text)``.
        checked: Each ``expect:`` key with its misses (``()``: it held); ``None`` when
            not checked.
        problems: Failures that are not expectations (an action, a script).
    """

    index: int
    line: int
    label: str
    requests: int = 0
    system: str = ""
    injected: str = ""
    tools: str = ""
    exchange: tuple[str, ...] = ()
    state: tuple[tuple[str, str], ...] = ()
    checked: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ScenarioTrace:
    """One scenario on one side.

    Attributes:
        file: Its file, relative to the side's root.
        name: Its name.
        line: Where it starts.
        passed: Whether ``buddy test`` passes it.
        start: What each capability shows before the first step.
        steps: Every step, in order.
        errors: Failures not of any step (the scenario could not run).
    """

    file: str
    name: str
    line: int
    passed: bool
    start: tuple[tuple[str, str], ...] = ()
    steps: tuple[StepTrace, ...] = ()
    errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BuddyTrace:
    """One buddy's scenarios on one side.

    Attributes:
        key: The manifest's path relative to the root.
        problem: Why none of its scenarios could run (``""``: they ran).
        scenarios: Each scenario that ran.
        invalid: ``(file, problems)`` of each scenario file that could not be read.
        files: Its scenario files, relative to the root.
    """

    key: str
    problem: str = ""
    scenarios: tuple[ScenarioTrace, ...] = ()
    invalid: tuple[tuple[str, str], ...] = ()
    files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SideJob:
    """What one side's process runs: the buddies ``keys`` of the side at ``root``."""

    root: str
    label: str
    display: str
    keys: tuple[str, ...]
    start: float


def scenario_files(buddy_dir: Path) -> list[Path]:
    """A buddy's scenario files, as ``buddy test`` finds them (``tests/*.yaml``)."""
    tests = buddy_dir / "tests"
    found = {p for g in SCENARIO_GLOBS for p in tests.glob(g) if p.exists() and not p.is_dir()}
    return sorted(found)


def _minute(match: re.Match[str]) -> str:
    from buddy.testing.scenario_models import CLOCK_TIMEZONE

    instant = datetime.fromtimestamp(float(match.group()), ZoneInfo(CLOCK_TIMEZONE))
    return instant.strftime("%Y-%m-%dT%H:%M")


def _masked(text: str) -> str:
    return _INSTANT.sub(_minute, _RANDOM_ID.sub(r"\1_…", text))


def _json(value: Any) -> str:
    from pydantic_core import to_jsonable_python

    return json.dumps(to_jsonable_python(value), ensure_ascii=False, sort_keys=True)


def _label(step: Any) -> str:
    action = step.action
    if action is None:
        return "expect"
    value = getattr(step, action)
    who = f" (as {step.as_})" if getattr(step, "as_", None) else ""
    return f"{action}{who}: {value if isinstance(value, str) else _json(value)}"


def _tools(tools: Sequence[Any]) -> str:
    """Each tool's name, description and parameters, a schema's key a line (so a diff
    names the one that changed)."""
    from pydantic_core import to_jsonable_python

    lines = []
    for tool in tools:
        lines.append(f"{tool.name}: {tool.description}")
        schema = json.dumps(
            to_jsonable_python(tool.parameters), ensure_ascii=False, sort_keys=True, indent=2
        )
        lines.append("  parameters: " + schema.replace("\n", "\n  "))
    return "\n".join(lines)


def _exchange(done: StepDone) -> tuple[str, ...]:
    seen = done.seen
    results = {r.id: r for r in seen.results}
    lines: list[str] = []

    def result(r: Any) -> str:
        text = "(redacted)" if r.text is None else r.text
        return f"result {r.name}{' (error)' if r.is_error else ''}: {text}"

    for call in seen.calls:
        lines.append(f"call {call.name} {_json(call.args)}")
        if call.id in results:
            lines.append(result(results.pop(call.id)))
    lines.extend(result(r) for r in results.values())
    for message in seen.messages:
        body = message.get("body") or {}
        text = body.get("text") if isinstance(body, dict) and set(body) == {"text"} else None
        lines.append(f"{message.get('kind')}: {text if text is not None else _json(body)}")
    return tuple(_masked(line) for line in lines)


class _Watch:
    """Traces one scenario's steps (a :class:`~buddy.testing.scenarios.StepWatch`)."""

    def __init__(self, suite: Suite) -> None:
        self.suite = suite
        self.start: tuple[tuple[str, str], ...] = ()
        self.steps: list[StepTrace] = []
        self.failures: set[str] = set()

    async def _shown(self, run: StepRun, seen: Any) -> tuple[tuple[str, str], ...]:
        from buddy.extend import resolve, step_expects

        read: dict[str, Any] = {}
        shown: dict[str, str] = {}
        for part in step_expects():
            if not part.show:
                continue
            if part.state and part.state not in read:
                read[part.state] = await resolve(part.state)(run, seen)
            shown.update(resolve(part.show)(read.get(part.state)))
        return tuple((k, _masked(v)) for k, v in shown.items())

    async def started(self, run: StepRun) -> None:
        from buddy.testing.expectations import Observed

        self.start = await self._shown(run, Observed())

    async def stepped(self, run: StepRun, done: StepDone) -> None:
        from buddy.manifest.locate import loc_of
        from buddy.manifest.yamlio import format_path

        assert self.suite.doc is not None
        seen = done.seen
        self.failures.update(map(str, done.failures))
        checked = None
        if done.checked is not None:
            checked = tuple(
                (key, tuple(f"{format_path(m.path)}: {m.message}" for m in misses))
                for key, misses in done.checked.items()
            )
        history = seen.histories[-1] if seen.histories else ()
        self.steps.append(
            StepTrace(
                index=done.index,
                line=loc_of(self.suite.doc, done.path).line,
                label=_label(done.step),
                requests=len(seen.systems),
                system=_masked(seen.systems[-1]) if seen.systems else "",
                injected=_masked("\n".join(m.content for m in history if m.role == "system")),
                tools=_tools(done.tools[-1]) if done.tools else "",
                exchange=_exchange(done),
                state=await self._shown(run, seen),
                checked=checked,
                problems=() if checked is not None else tuple(f.message for f in done.failures),
            )
        )


def _issues_text(issues: Sequence[Issue]) -> str:
    lines = []
    for i in issues:
        where = f"{i.file}:{i.line}:{i.column}" if i.line else i.file
        lines.append(f"{where}: error: {i.message}" + (f" [{i.path}]" if i.path else ""))
    return "\n".join(lines)


async def _run_buddy(job: SideJob, side: Side, key: str) -> BuddyTrace:
    from buddy.compile.compiler import check
    from buddy.testing.scenario_format import read_suite
    from buddy.testing.scenarios import run_scenario

    manifest = side.root / key
    if not manifest.is_file():
        return BuddyTrace(key, problem=f"no {key} in {job.label}")
    files = scenario_files(manifest.parent)
    shown = tuple(Path(os.path.relpath(f, side.root)).as_posix() for f in files)
    blueprint, issues = check(manifest)
    if blueprint is None:
        relocated = [_relocate(i, side, shown=False) for i in issues]
        return BuddyTrace(
            key, problem="it does not compile:\n" + _issues_text(relocated), files=shown
        )
    scenarios: list[ScenarioTrace] = []
    invalid: list[tuple[str, str]] = []
    for file, display in zip(files, shown, strict=True):
        suite = read_suite(file, blueprint, display=display)
        if suite.issues:
            invalid.append((display, _issues_text(suite.issues)))
            continue
        for index, (_, scenario) in enumerate(suite.scenarios):
            watch = _Watch(suite)
            result = await run_scenario(blueprint, suite, index, watch=watch, start=job.start)
            root = str(side.root)
            scenarios.append(
                ScenarioTrace(
                    file=display,
                    name=scenario.name,
                    line=result.line,
                    passed=result.passed,
                    start=watch.start,
                    steps=tuple(watch.steps),
                    errors=tuple(
                        f.message.replace(root, ".")
                        for f in result.failures
                        if str(f) not in watch.failures
                    ),
                )
            )
    return BuddyTrace(key, scenarios=tuple(scenarios), invalid=tuple(invalid), files=shown)


def warm() -> None:
    """Import what a side runs (the runtime, the dev platform, every capability), in a
    side's process before it is given its side: done while the views are compared."""
    from buddy.extend import registry
    from buddy.testing import scenarios  # noqa: F401

    registry()


def run_side(job: SideJob) -> tuple[BuddyTrace, ...]:
    """Run the scenarios of the buddies ``job.keys`` on one side (in its own process).

    Args:
        job: The side's root and the manifests (relative to it) to run.

    Returns:
        One trace per key, in order.
    """

    async def run() -> tuple[BuddyTrace, ...]:
        side = Side(Path(job.root), job.label, (), job.display)
        return tuple([await _run_buddy(job, side, key) for key in job.keys])

    return asyncio.run(run())
