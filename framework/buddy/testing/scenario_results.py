"""What a scenario run reports: its located failures and notes, its result, and what the
buddy logged meanwhile (:mod:`buddy.testing.scenarios` runs the scenario); and what a
watcher of the run (a replay) is told after each step."""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from buddy.manifest.yamlio import YamlPath

if TYPE_CHECKING:
    from buddy.models.base import ToolDefinition
    from buddy.testing.expectations import Miss, Observed
    from buddy.testing.parts import StepRun
    from buddy.testing.scenario_models import CoreStep

__all__ = [
    "Failure",
    "LogCapture",
    "ScenarioResult",
    "StepDone",
    "StepError",
    "StepWatch",
    "capture_logs",
]


@dataclass(frozen=True, slots=True)
class Failure:
    """A located failure (or note) of a scenario run."""

    file: str
    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        field_path = f" [{self.path}]" if self.path else ""
        return f"{self.file}:{self.line}:{self.column}: {self.message}{field_path}"


@dataclass
class ScenarioResult:
    """The outcome of one scenario.

    Attributes:
        name: The scenario's name.
        file: Its file, as shown.
        line: Where it starts.
        failures: What failed (a scenario stops after its first failing step).
        notes: Checks skipped against a real model.
        seconds: How long it ran.
        log: What the buddy logged meanwhile (warnings and errors).
    """

    name: str
    file: str
    line: int
    failures: list[Failure] = field(default_factory=list)
    notes: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    log: str = ""

    @property
    def passed(self) -> bool:
        """Whether nothing failed."""
        return not self.failures


class StepError(Exception):
    """An action of a step could not be done; ``path`` says where it is written."""

    def __init__(self, path: YamlPath, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


class LogCapture(logging.Handler):
    """Collects what the buddy logs during a scenario (shown when it fails)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.buffer = io.StringIO()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.buffer.write(self.format(record) + "\n")


@contextlib.contextmanager
def capture_logs() -> Iterator[LogCapture]:
    handler = LogCapture()
    logger = logging.getLogger("buddy")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@dataclass(frozen=True, slots=True)
class StepDone:
    """What one step did, as a :class:`StepWatch` is told it.

    Attributes:
        index: The step's index in its scenario.
        path: Where the step is written in the file.
        step: The step as written.
        seen: What it produced (messages, calls, results, turns, each request's system
            prompt and messages).
        tools: The tools each model request of the step offered, in order.
        failures: What failed in the step (its action, its script, its expectations),
            located; empty when it passed.
        checked: Each ``expect:`` key of the step with its misses (empty: it held);
            ``None`` when the expectations were not checked (no ``expect:``, or the step
            failed before them).
    """

    index: int
    path: YamlPath
    step: CoreStep
    seen: Observed
    tools: tuple[tuple[ToolDefinition, ...], ...]
    failures: tuple[Failure, ...]
    checked: dict[str, list[Miss]] | None


class StepWatch(Protocol):
    """Watches a scenario run (a replay). With one, the run goes on after a failing
    step, so every step is seen; the result's pass or fail is still what ``buddy test``
    says (the first failure is the same: the steps before it ran alike)."""

    async def started(self, run: StepRun) -> None:
        """The buddy is running and the clock is set; no step has run."""
        ...

    async def stepped(self, run: StepRun, done: StepDone) -> None:
        """A step ended (its turns finished, its expectations checked)."""
        ...
