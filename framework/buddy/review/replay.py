"""Replay: run the scenarios of every buddy a change touches on both sides, and compare
what each step did.

What a change *does* is what its scenarios show. Each side runs them in a process of its
own (:mod:`buddy.review.replay_side`: offline and scripted, as ``buddy test`` runs them,
each step traced as text) — in parallel where the machine has the cores — so the two
versions' plugins (modules of the same name) never meet in one interpreter. Both
platforms' clocks start at the instant the compiled view uses
(:data:`~buddy.compile.persona.EXAMPLE_NOW`): the dates in two sides' prompts agree,
whenever they run. :func:`replay` compares the traces step by step and keeps only what
differs: the last model request's system prompt, injected messages and tools, the calls,
results and replies, what each capability shows of its state (``StepExpect.show``:
facts, the card, mood, lore, subscriptions …) where a step moved it differently, and the
expectations that hold on one side only. :mod:`buddy.review.replay_report` prints it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context

from buddy.compile.persona import EXAMPLE_NOW
from buddy.review.diff import Report, Side, _index, _name, _unified
from buddy.review.replay_side import (
    BuddyTrace,
    ScenarioTrace,
    SideJob,
    StepTrace,
    run_side,
    scenario_files,
    warm,
)

__all__ = [
    "NOT_CHECKED",
    "BuddyReplay",
    "Replay",
    "ScenarioDiff",
    "Sides",
    "StateChange",
    "StepDiff",
    "replay",
    "touched",
    "workers",
]

#: A step's expectations not checked (no ``expect:``, or the step failed before them).
NOT_CHECKED = "not checked"


# ---------------------------------------------------------------- comparing


@dataclass(frozen=True, slots=True)
class StateChange:
    """A label whose step went differently: each side's ``(before, after)`` text
    (``None``: no such label)."""

    label: str
    old: tuple[str | None, str | None]
    new: tuple[str | None, str | None]


@dataclass(frozen=True, slots=True)
class StepDiff:
    """What differs in one step.

    Attributes:
        index: The step's index; ``line``: where it is written (the new side's).
        label: Its action (``old → new`` when the two sides' files differ there).
        only: ``old`` or ``new`` when the step is on one side only, else ``""``.
        requests: ``(old, new)`` model requests, when they differ (else ``None``).
        prompt: A unified diff of the last request's system prompt.
        injected: A unified diff of the messages layers injected into it.
        tools: A unified diff of the tools it offered.
        exchange: A unified diff of the calls, results and replies.
        state: The state labels that went differently.
        expectations: ``(key, old, new)`` of each expectation that held on one side
            only: ``""`` where it held, else its misses.
        problems: ``(old, new)`` failures other than expectations, when they differ.
    """

    index: int
    line: int
    label: str
    only: str = ""
    requests: tuple[int, int] | None = None
    prompt: str = ""
    injected: str = ""
    tools: str = ""
    exchange: str = ""
    state: tuple[StateChange, ...] = ()
    expectations: tuple[tuple[str, str, str], ...] = ()
    problems: tuple[tuple[str, ...], tuple[str, ...]] | None = None


@dataclass(frozen=True, slots=True)
class ScenarioDiff:
    """One scenario compared: ``old``/``new`` are ``PASS``, ``FAIL`` or ``absent``."""

    file: str
    name: str
    line: int
    old: str
    new: str
    steps: tuple[StepDiff, ...] = ()
    errors: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    @property
    def differs(self) -> bool:
        """Whether anything differs."""
        return bool(self.steps) or self.old != self.new or self.errors is not None


@dataclass(frozen=True, slots=True)
class BuddyReplay:
    """One touched buddy replayed.

    Attributes:
        name: Its directory relative to the roots.
        old_problem: Why its scenarios could not run on the old side (``""``: they ran).
        new_problem: The same on the new side.
        scenarios: Each scenario found on either side, compared.
        invalid: ``(side label, file, problems)`` of scenario files that could not be read.
        view_changed: Whether its compiled view changed (``buddy diff`` without replay).
        invalid_alike: Whether the same files could not be read alike on both sides
            (then they are no difference).
    """

    name: str
    old_problem: str
    new_problem: str
    scenarios: tuple[ScenarioDiff, ...]
    invalid: tuple[tuple[str, str, str], ...] = ()
    view_changed: bool = False
    invalid_alike: bool = False

    @property
    def untested(self) -> bool:
        """Whether it has no scenario on either side (only its view can be compared)."""
        return not self.scenarios and not self.invalid and not self.problem_differs

    @property
    def problem_differs(self) -> bool:
        return self.old_problem != self.new_problem

    @property
    def differs(self) -> bool:
        """Whether its behaviour differs: a scenario, a scenario file, whether it runs —
        or, with no scenarios at all, its compiled view."""
        if self.untested:
            return self.view_changed
        unread = bool(self.invalid) and not self.invalid_alike
        return self.problem_differs or unread or any(s.differs for s in self.scenarios)


@dataclass(frozen=True, slots=True)
class Replay:
    """The result of :func:`replay`: labels of the sides and every touched buddy."""

    old: str
    new: str
    buddies: tuple[BuddyReplay, ...]

    @property
    def changed(self) -> bool:
        """Whether behaviour differs anywhere (what ``--exit-code`` reports)."""
        return any(b.differs for b in self.buddies)


def _diff(old: str, new: str, what: str, labels: tuple[str, str]) -> str:
    if old == new:
        return ""
    return _unified(old, new, f"{what} ({labels[0]})", f"{what} ({labels[1]})")


def _state(
    old: StepTrace, new: StepTrace, old_before: Mapping[str, str], new_before: Mapping[str, str]
) -> tuple[StateChange, ...]:
    old_after, new_after = dict(old.state), dict(new.state)
    labels = list(dict.fromkeys([*old_before, *old_after, *new_before, *new_after]))
    changes = []
    for label in labels:
        a = (old_before.get(label), old_after.get(label))
        b = (new_before.get(label), new_after.get(label))
        # Shown where the two sides' steps went differently and one of them moved it:
        # a difference carried from an earlier step is not repeated at every step.
        if a != b and (a[0] != a[1] or b[0] != b[1]):
            changes.append(StateChange(label, a, b))
    return tuple(changes)


def _outcome(misses: tuple[str, ...] | None) -> str:
    if misses is None:
        return NOT_CHECKED
    return "\n".join(misses)


def _expectations(old: StepTrace, new: StepTrace) -> tuple[tuple[str, str, str], ...]:
    a, b = dict(old.checked or ()), dict(new.checked or ())
    out = []
    for key in dict.fromkeys([*a, *b]):
        held_a = old.checked is not None and key in a and not a[key]
        held_b = new.checked is not None and key in b and not b[key]
        if held_a != held_b:
            out.append((key, _outcome(a.get(key)), _outcome(b.get(key))))
    return tuple(out)


def _step(
    old: StepTrace,
    new: StepTrace,
    before: tuple[Mapping[str, str], Mapping[str, str]],
    labels: tuple[str, str],
) -> StepDiff | None:
    both = old.requests and new.requests
    diff = StepDiff(
        index=new.index,
        line=new.line,
        label=new.label if old.label == new.label else f"{old.label} → {new.label}",
        requests=None if old.requests == new.requests else (old.requests, new.requests),
        prompt=_diff(old.system, new.system, "system prompt", labels) if both else "",
        injected=_diff(old.injected, new.injected, "injected messages", labels) if both else "",
        tools=_diff(old.tools, new.tools, "tools", labels) if both else "",
        exchange=_diff(
            "\n".join(old.exchange), "\n".join(new.exchange), "calls and replies", labels
        ),
        state=_state(old, new, *before),
        expectations=_expectations(old, new),
        problems=None if old.problems == new.problems else (old.problems, new.problems),
    )
    parts = (diff.requests, diff.prompt, diff.injected, diff.tools, diff.exchange)
    if any(parts) or diff.state or diff.expectations or diff.problems:
        return diff
    return None


def _scenario(
    old: ScenarioTrace | None, new: ScenarioTrace | None, labels: tuple[str, str]
) -> ScenarioDiff:
    some = new or old
    assert some is not None
    status = {True: "PASS", False: "FAIL"}
    shown = ScenarioDiff(
        some.file,
        some.name,
        some.line,
        status[old.passed] if old else "absent",
        status[new.passed] if new else "absent",
    )
    if old is None or new is None:
        return shown
    steps: list[StepDiff] = []
    before = (dict(old.start), dict(new.start))
    for index in range(max(len(old.steps), len(new.steps))):
        a = old.steps[index] if index < len(old.steps) else None
        b = new.steps[index] if index < len(new.steps) else None
        if a is None or b is None:
            one = a or b
            assert one is not None
            only = "old" if a is not None else "new"
            steps.append(StepDiff(one.index, one.line, one.label, only=only))
            continue
        found = _step(a, b, before, labels)
        if found is not None:
            steps.append(found)
        before = (dict(a.state), dict(b.state))
    errors = None if old.errors == new.errors else (old.errors, new.errors)
    return ScenarioDiff(new.file, new.name, new.line, shown.old, shown.new, tuple(steps), errors)


def _keyed(scenarios: Sequence[ScenarioTrace]) -> dict[tuple[str, str, int], ScenarioTrace]:
    """Scenarios by file, name and which of that name it is (names may repeat)."""
    out: dict[tuple[str, str, int], ScenarioTrace] = {}
    for s in scenarios:
        n = 0
        while (s.file, s.name, n) in out:
            n += 1
        out[(s.file, s.name, n)] = s
    return out


def _buddy(
    name: str, old: BuddyTrace, new: BuddyTrace, labels: tuple[str, str], view_changed: bool
) -> BuddyReplay:
    if old.problem or new.problem:
        scenarios: tuple[ScenarioDiff, ...] = ()
    else:
        a, b = _keyed(old.scenarios), _keyed(new.scenarios)
        scenarios = tuple(_scenario(a.get(k), b.get(k), labels) for k in dict.fromkeys([*a, *b]))
    invalid = tuple(
        (label, file, problems)
        for label, trace in zip(labels, (old, new), strict=True)
        for file, problems in trace.invalid
    )
    # A file invalid alike on both sides is no difference; say it once.
    alike = bool(old.invalid) and old.invalid == new.invalid
    if alike:
        invalid = tuple((f"{labels[0]} and {labels[1]}", f, p) for f, p in old.invalid)
    return BuddyReplay(
        name, old.problem, new.problem, scenarios, invalid, view_changed, invalid_alike=alike
    )


def _scenarios_differ(old: Side, new: Side, key: str) -> bool:
    """Whether the buddy's scenario files differ between the sides."""

    def files(side: Side) -> dict[str, bytes]:
        folder = (side.root / key).parent
        return {f.name: f.read_bytes() for f in scenario_files(folder) if f.is_file()}

    return files(old) != files(new)


def touched(report: Report) -> list[str]:
    """The manifests (relative to the roots) whose scenarios a replay runs: every buddy
    in the report, and every buddy whose scenario files changed."""
    keys = {entry.key for entry in report.buddies}
    both = _index(report.old).keys() & _index(report.new).keys()
    keys.update(k for k in both if _scenarios_differ(report.old, report.new, k))
    return sorted(keys)


def workers() -> int:
    """Sides run at once: two where the machine has two cores, else one after the other."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return 2 if cores >= 2 else 1


class Sides:
    """The two processes a replay runs its sides in, one per side, started as soon as
    this is made: each imports the runtime (:func:`~buddy.review.replay_side.warm`) while
    the caller compares the compiled views. Spawned — nothing of this process's state, no
    fork of its threads — and given one side each, so two versions of a plugin never
    share an interpreter. Use as ``with Sides() as sides: ... sides.replay(report)``.
    """

    def __init__(self, processes: int | None = None) -> None:
        self.processes = processes or workers()
        context = get_context("spawn")
        self._pools = [ProcessPoolExecutor(1, mp_context=context) for _ in range(2)]
        # On one core the second side's process is started when the first side is done.
        self._warm = [self._pools[0].submit(warm)]
        if self.processes > 1:
            self._warm.append(self._pools[1].submit(warm))

    def __enter__(self) -> Sides:
        return self

    def __exit__(self, *exc: object) -> None:
        for pool in self._pools:
            pool.shutdown(cancel_futures=True)

    def replay(self, report: Report) -> Replay:
        """Run the scenarios of every buddy ``report`` touches on both sides and compare.

        Args:
            report: What :func:`buddy.review.diff.compare` found.

        Returns:
            For each touched buddy, what differs step by step; deterministic for the
            same two versions.
        """
        keys = touched(report)
        labels = (report.old.label, report.new.label)
        if not keys:
            return Replay(*labels, ())
        start = EXAMPLE_NOW.timestamp()
        old_job, new_job = (
            SideJob(str(side.root), side.label, side.display, tuple(keys), start)
            for side in (report.old, report.new)
        )
        old_run = self._pools[0].submit(run_side, old_job)
        if self.processes == 1:
            old_run.result()
        new_run = self._pools[1].submit(run_side, new_job)
        old_traces, new_traces = old_run.result(), new_run.result()
        views = {entry.key: entry.status != "affected" for entry in report.buddies}
        buddies = tuple(
            _buddy(_name(key, report.new.root), a, b, labels, views.get(key, False))
            for key, a, b in zip(keys, old_traces, new_traces, strict=True)
        )
        return Replay(*labels, buddies)


def replay(report: Report, *, processes: int | None = None) -> Replay:
    """Run the scenarios of every buddy ``report`` touches on both sides and compare
    (:meth:`Sides.replay` in processes started now).

    Args:
        report: What :func:`buddy.review.diff.compare` found.
        processes: How many sides run at once (default: 2 where the machine has 2
            cores, else 1); each side has a process of its own.
    """
    with Sides(processes) as sides:
        return sides.replay(report)
